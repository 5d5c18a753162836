package device

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/preflight"

	"github.com/gpuinit/gpuinit/lazy"
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
	if i := e.leadIndex(); i >= 0 {
		return e.Tried[i]
	}
	return BackendFailure{}
}

// leadIndex is the index in Tried of Lead, or -1 where Tried is empty.
func (e *NoBackendError) leadIndex() int {
	best, bestRank := -1, -1
	for i, f := range e.Tried {
		if r := progress(f.Err); r > bestRank {
			best, bestRank = i, r
		}
	}
	return best
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

// Unwrap returns the summary sentinel, the one errors.Is matches.
func (e *NoBackendError) Unwrap() []error { return []error{e.Summary()} }

// As finds target among the backends' errors, for errors.As: the lead's
// first (Lead), then each other backend's in the order tried. So errors.As
// finds the leading backend's *DriverError first. The backends' errors are
// not e's Unwrap: errors.Is does not see their sentinels.
func (e *NoBackendError) As(target any) bool {
	lead := e.leadIndex()
	if lead >= 0 && e.Tried[lead].Err != nil && errors.As(e.Tried[lead].Err, target) {
		return true
	}
	for i, f := range e.Tried {
		if i != lead && f.Err != nil && errors.As(f.Err, target) {
			return true
		}
	}
	return false
}

// failure is the one error type of device's own. It is what a user gets
// between Init and the driver's error:
//   - a backend's initialization failure: the backend's error (a
//     *DriverError, a *PreflightError), its class and what the host showed
//     (classify);
//   - auto's: its *NoBackendError, the most hopeful class of its backends'
//     and the lead's evidence (finalError);
//   - the memoized failure that Init returns: one of those, or lazy's panic,
//     with lazy's *InitError, which errors.As finds (Runtime.said);
//   - any other error that says its own message once over several causes.
//
// So a user's error is at most three layers above the driver's: the
// failure, auto's *NoBackendError, the backend's failure.
type failure struct {
	msg      string          // the whole message; "" says the lead cause's, then the evidence
	class    Class           // ClassNone where it is not an initialization failure, or not classified yet
	evidence string          // what the host showed that decided the class, or ""
	causes   []error         // the lead first; errors.Is and errors.As see each
	memo     *lazy.InitError // what lazy memoized, where Init returns f; errors.As finds it
}

func (f *failure) Error() string {
	switch {
	case f.msg != "":
		return f.msg
	case f.evidence != "":
		return f.causes[0].Error() + " (" + f.class.String() + ": " + f.evidence + ")"
	}
	return f.causes[0].Error()
}

func (f *failure) Unwrap() []error { return f.causes }

// As finds lazy's *InitError, where f is the failure Init returns. It is not
// among f's causes, which are its own: lazy's wraps f's.
func (f *failure) As(target any) bool {
	p, ok := target.(**lazy.InitError)
	if ok && f.memo != nil {
		*p = f.memo
	}
	return ok && f.memo != nil
}

// Evidence is what the host showed that decided the class, or "". The
// health status reads it through errors.As with an interface.
func (f *failure) Evidence() string { return f.evidence }

// PreflightError is a preflight child that gave no answer. It hung past its
// deadline, crashed, panicked, or exited without a report. A hung one matches
// [driver.ErrInitHung] with errors.Is.
type PreflightError struct {
	Backend string        // the backend it checked
	Command string        // the program run
	Attempt int           // which preflight child of this Runtime's, from 1
	Took    time.Duration // from its start to its end, or to giving up on it
	// Hung means it was still running at the deadline. Its Stacks then name
	// the driver call it was stuck in (Call), unless it was stuck too deep
	// to print them. Unkillable means it was still there after SIGKILL,
	// stuck in the kernel. It is left to the kernel; nothing waits for it.
	Hung, Unkillable bool
	Call             string // the driver call the stacks show, such as "cuInit"
	Stacks           string // gpuinit's goroutines of its dump
	Signal           string // the signal that ended it, such as "SIGSEGV"
	ExitCode         int    // its exit status; -1 when a signal ended it
	Stderr           string // the tail of its stderr
	NoReport         bool   // it exited without a report: it does not serve the preflight
	// Report is the Go runtime's own account of the child's death, before
	// its stacks: "panic: ..." (Panicked), "fatal error: ...", or "SIGSEGV:
	// segmentation violation" and what follows. Frame is the frame that
	// panicked or crashed, below the runtime's own. Its file is named as
	// -trimpath would, never by the build machine's path:
	// "sim.(*Backend).Init at github.com/gpuinit/gpuinit/device/sim/sim.go:188".
	Report   string
	Panicked bool
	Frame    string
}

// Error says what the child did. It names the call it hung or crashed in,
// the signal that ended it, or the panic and the frame that panicked.
func (e *PreflightError) Error() string {
	what := fmt.Sprintf("device: %s: preflight child %d (%s)", e.Backend, e.Attempt, e.Command)
	switch {
	case e.Hung && e.Unkillable:
		what += fmt.Sprintf(" hung for %s, and could not be killed: it is stuck in the kernel driver", e.Took.Round(time.Millisecond))
	case e.Hung:
		what += fmt.Sprintf(" hung: no answer within %s", e.Took.Round(time.Millisecond))
	case e.Panicked:
		if e.Frame != "" {
			what += " panicked in " + e.Frame
		} else {
			what += " panicked"
		}
		return what + ": " + e.Report
	case e.NoReport:
		what += fmt.Sprintf(" exited with status %d without a report: is it a program that serves the preflight (imports device/backends, or calls device.ServePreflight)?", e.ExitCode)
	case e.Signal != "":
		what += " crashed with " + e.Signal
	default:
		what += fmt.Sprintf(" exited with status %d without a report", e.ExitCode)
	}
	if e.Call != "" {
		what += ", in " + e.Call
	} else if e.Frame != "" && !e.Hung {
		what += ", in " + e.Frame
	}
	switch {
	case e.Hung: // its Stacks say where
	case e.Report != "":
		what += ": " + e.Report
	default: // not the Go runtime's words: the driver's own, or another program's
		if tail := preflight.LastLines(e.Stderr, 3); tail != "" {
			what += ": " + tail
		}
	}
	return what
}

// Is reports driver.ErrInitHung for a child that hung.
func (e *PreflightError) Is(target error) bool { return e.Hung && target == driver.ErrInitHung }

// Crashed reports whether the child crashed: a signal ended it, or it
// reported a fatal signal of its own, as a Go child does for a fault or an
// abort in C code (and exits with status 2). A Go panic is not a crash,
// even where GOTRACEBACK=crash ends it with SIGABRT: code that ran in the
// child panicked (see the class table).
func (e *PreflightError) Crashed() bool { return e.Signal != "" && !e.Panicked }
