package device

import (
	"errors"
	"strings"

	"github.com/gpuinit/gpuinit/device/driver"
)

// The sentinel errors. They are package driver's, so that backends and
// servers test for the same values with errors.Is. A *DriverError reports
// the sentinel its raw code means.
var (
	// ErrNoDevice means the driver works but sees no usable GPU.
	ErrNoDevice = driver.ErrNoDevice
	// ErrDriverNotFound means the driver library or kernel module is missing.
	ErrDriverNotFound = driver.ErrDriverNotFound
	// ErrDriverMismatch means the driver is too old for the runtime, lacks
	// a function this backend needs, or its user and kernel parts differ.
	ErrDriverMismatch = driver.ErrDriverMismatch
	// ErrInvalidDevice means an ordinal outside 0..count-1.
	ErrInvalidDevice = driver.ErrInvalidDevice
	// ErrNotCompiled means the backend is not in this binary. Its package
	// was not imported, or the build could not have it (no cgo).
	ErrNotCompiled = driver.ErrNotCompiled
	// ErrNotSupported means the backend lacks an optional feature. Or the
	// library that provides it could not be loaded (generators without
	// libcurand).
	ErrNotSupported = driver.ErrNotSupported
	// ErrDeviceLost means a device is unusable for the rest of the process.
	// A LostDevice wraps it, and so does every call refused on a lost device.
	ErrDeviceLost = driver.ErrDeviceLost
	// ErrBadSetting means a GPUINIT_* variable or an argument has a value
	// that cannot be used. The error names it. Open and UsePreflight return
	// it.
	ErrBadSetting = driver.ErrBadSetting
)

// DriverError is a failed driver call. It has the raw code and its name, as
// the vendor library gives them, and a hint. See [driver.DriverError].
type DriverError = driver.DriverError

// Info describes one device, as read once at initialization. See
// [driver.Info].
type Info = driver.Info

// NoBackendError is why "auto" found no usable GPU backend. Tried holds what
// each backend said, in the order tried. errors.Is matches one summary
// sentinel, the one [NoBackendError.Summary] returns. errors.As reaches each
// backend's own error, such as a *DriverError. errors.Is does not see their
// sentinels, so that the summary stands alone.
type NoBackendError struct {
	Tried []BackendFailure
}

// BackendFailure is one backend's reason for being passed over.
type BackendFailure struct {
	Backend string
	Err     error
	// DriverVersion is the version the backend's driver reported before it
	// failed: it loaded, but had no usable device, say. It is 0 where the
	// driver never loaded or could not tell.
	DriverVersion int
}

// Error is the lead backend's reason, naming the others auto tried. Their
// own reasons are in Tried and Stats' PassedOver, not concatenated here. So
// the message is one a person reads once.
func (e *NoBackendError) Error() string {
	if len(e.Tried) == 0 {
		return "device: no GPU backend is in this binary"
	}
	lead := e.Lead()
	var others []string
	for _, f := range e.Tried {
		if f.Backend != lead.Backend {
			others = append(others, f.Backend)
		}
	}
	s := lead.Err.Error()
	if len(others) > 0 {
		s += " (auto tried " + strings.Join(others, " and ") + " too: none is usable)"
	}
	return s
}

// Summary is the one sentinel e matches: the kind of its Lead's failure.
// errors.Is, errors.As and a report's kind, op and hint then all speak of
// the same backend. The sentinel is one of these:
//   - [ErrNotCompiled] where no backend is in the binary;
//   - [ErrDriverNotFound] where no library loaded;
//   - [ErrDriverMismatch] where the lead's library loaded but is not what
//     the backend needs;
//   - [ErrNoDevice] where a driver answered: no device, not ready, or
//     anything else it said.
func (e *NoBackendError) Summary() error {
	if len(e.Tried) == 0 {
		return ErrNotCompiled
	}
	lead := e.Lead().Err
	for _, s := range []error{ErrNotCompiled, ErrDriverNotFound, ErrDriverMismatch, ErrNoDevice} {
		if errors.Is(lead, s) {
			return s
		}
	}
	return ErrNoDevice
}

// Lead returns the failure that leads e: the backend that got furthest. A
// driver that answered comes first, then one whose library loaded but
// mismatched. Among equals, the first tried leads. Where none loaded, the
// first leads. On a host with only ROCm, hip's failure leads, not cuda's
// missing library: its error is the one worth reading.
func (e *NoBackendError) Lead() BackendFailure {
	if len(e.Tried) == 0 {
		return BackendFailure{}
	}
	best, bestRank := 0, -1
	for i, f := range e.Tried {
		if r := progress(f.Err); r > bestRank {
			best, bestRank = i, r
		}
	}
	return e.Tried[best]
}

// progress ranks how far a backend got before err. The ranks are: not
// compiled in, its library not found, found but mismatched, and its driver
// answered. An answer is any code, even one that says the driver mismatches
// the kernel's.
func progress(err error) int {
	switch {
	case errors.Is(err, ErrNotCompiled):
		return 0
	case errors.Is(err, ErrDriverNotFound):
		return 1
	case errors.Is(err, ErrDriverMismatch):
		var de *DriverError
		if errors.As(err, &de) && de.Code != 0 {
			return 3 // the driver answered with a code: 803, say
		}
		return 2
	}
	return 3
}

// Unwrap returns the summary sentinel, then the leading backend's error
// (Lead), then each other backend's in the order tried. The backends' errors
// are reachable by errors.As only. errors.As finds the leading backend's
// *DriverError first.
func (e *NoBackendError) Unwrap() []error {
	errs := []error{e.Summary()}
	lead := e.Lead()
	if lead.Err != nil {
		errs = append(errs, asOnly{lead.Err})
	}
	for _, f := range e.Tried {
		if f.Err != lead.Err {
			errs = append(errs, asOnly{f.Err})
		}
	}
	return errs
}

// asOnly hides an error's sentinels from errors.Is. errors.As still finds
// the types inside it.
type asOnly struct{ err error }

func (a asOnly) Error() string      { return a.err.Error() }
func (a asOnly) As(target any) bool { return errors.As(a.err, target) }

// causes is an error whose message is its own, with one prefix and no more.
// It wraps errs for errors.Is and errors.As without saying their messages
// again.
type causes struct {
	msg  string
	errs []error
}

func (c *causes) Error() string   { return c.msg }
func (c *causes) Unwrap() []error { return c.errs }
