package device

import (
	"errors"
	"strings"

	"github.com/gpuinit/gpuinit/device/driver"
)

// The sentinel errors, shared with package driver so that backends and
// servers test for the same values with errors.Is. A *DriverError reports the
// sentinel its raw code means.
var (
	// ErrNoDevice: the driver works but sees no usable GPU.
	ErrNoDevice = driver.ErrNoDevice
	// ErrDriverNotFound: the driver library or kernel module is missing.
	ErrDriverNotFound = driver.ErrDriverNotFound
	// ErrDriverMismatch: the driver is too old for the runtime, lacks a
	// function this backend needs, or its user and kernel parts differ.
	ErrDriverMismatch = driver.ErrDriverMismatch
	// ErrInvalidDevice: an ordinal outside 0..count-1.
	ErrInvalidDevice = driver.ErrInvalidDevice
	// ErrNotCompiled: the backend is not in this binary, because its package
	// was not imported or because the build could not have it (no cgo).
	ErrNotCompiled = driver.ErrNotCompiled
	// ErrNotSupported: the backend lacks an optional feature, or the library
	// that provides it (generators without libcurand) could not be loaded.
	ErrNotSupported = driver.ErrNotSupported
	// ErrDeviceLost: a device is unusable for the rest of the process. A
	// LostDevice wraps it; so does every call refused on a lost device.
	ErrDeviceLost = driver.ErrDeviceLost
	// ErrBadSetting: a GPUINIT_* variable or an argument has a value that
	// cannot be used; the error names it. Open and UsePreflight return it.
	ErrBadSetting = driver.ErrBadSetting
)

// DriverError is a failed driver call, with the raw code and its name as the
// vendor library gives them, and a hint; see driver.DriverError.
type DriverError = driver.DriverError

// Info describes one device, as read once at initialization; see driver.Info.
type Info = driver.Info

// NoBackendError is why "auto" found no usable GPU backend: what each backend
// it tried said, in the order tried. errors.Is matches one summary sentinel:
// ErrNotCompiled when no GPU backend is in the binary, ErrDriverNotFound when
// none of the compiled ones could load its library, and ErrNoDevice when at
// least one driver loaded but none gave a usable device. errors.As reaches each
// backend's own error (a *DriverError), but errors.Is does not see their
// sentinels, so that the summary stands alone.
type NoBackendError struct {
	Tried []BackendFailure
}

// BackendFailure is one backend's reason for being passed over.
type BackendFailure struct {
	Backend string
	Err     error
	// DriverVersion is the version the backend's driver reported before it
	// failed (it loaded, but had no usable device, say); 0 where it never
	// loaded or could not tell.
	DriverVersion int
}

// Error is the lead backend's reason, naming the others auto tried: each
// one's own reason is in Tried (and Stats' PassedOver), not concatenated
// here, so that the message is one a person reads once.
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

// Summary is the one sentinel e matches: the kind of its Lead's failure, so
// that errors.Is, errors.As and a report's kind, op and hint all speak of the
// same backend. It is ErrNotCompiled where no backend is in the binary,
// ErrDriverNotFound where no library loaded, ErrDriverMismatch where the lead's
// library loaded but is not what the backend needs, and ErrNoDevice where a
// driver answered (no device, not ready, or anything else it said).
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

// Lead returns the failure that leads e: the backend whose library loaded and
// got furthest (a driver that answered, then one whose library loaded but
// mismatched), the first tried among equals; where none loaded, the first.
// On a host with only ROCm, hip's failure leads, not cuda's missing
// library: its error is the one worth reading.
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

// progress ranks how far a backend got before err: not compiled in, its
// library not found, found but mismatched, or its driver answered (with a
// code, even one that says the driver mismatches the kernel's).
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
// (Lead), then each other backend's in the order tried, reachable by
// errors.As only: errors.As finds the leading backend's *DriverError first.
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

// asOnly hides an error's sentinels from errors.Is while errors.As still finds
// the types inside it.
type asOnly struct{ err error }

func (a asOnly) Error() string      { return a.err.Error() }
func (a asOnly) As(target any) bool { return errors.As(a.err, target) }

// causes is an error whose message is its own, one prefix and no more, and
// which wraps errs for errors.Is and errors.As without saying their
// messages again.
type causes struct {
	msg  string
	errs []error
}

func (c *causes) Error() string   { return c.msg }
func (c *causes) Unwrap() []error { return c.errs }
