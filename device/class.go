package device

import (
	"errors"
	"strings"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/lazy"
)

// Class is what an initialization failure means for the process. It says
// whether time, a restart, or only an operator can make the GPU usable.
// Health checks decide by it: liveness fails only where a restart of the
// process can help. gpuprobe's labels and metrics carry it, so that an alert
// can fire on the right ones.
type Class int

// The classes. When auto's backends failed differently, ClassOf prefers the
// later ones: ClassNotYet, then ClassNeedsOperator, then ClassNoGPUHere.
const (
	// ClassNone is not an initialization failure. It is a caller's own
	// cancellation, or an error of a call on a device that works.
	ClassNone Class = iota
	// ClassNoGPUHere means this host, or this binary, has no GPU gpuinit can
	// use. A restart cannot change that.
	ClassNoGPUHere
	// ClassNeedsOperator means a GPU is there, but something only an operator
	// can fix keeps it from working. A restart does not help.
	ClassNeedsOperator
	// ClassNotYet means the failure is expected to clear by itself. The
	// preflight retries it. A fresh process may succeed where this one gave
	// up.
	ClassNotYet
)

// String is the class's name in labels and metrics: "no-gpu", "not-yet",
// "needs-operator", or "" for ClassNone.
func (c Class) String() string {
	switch c {
	case ClassNoGPUHere:
		return "no-gpu"
	case ClassNotYet:
		return "not-yet"
	case ClassNeedsOperator:
		return "needs-operator"
	}
	return ""
}

// Describe says in words what the class means, for a status page or a log.
func (c Class) Describe() string {
	switch c {
	case ClassNoGPUHere:
		return "no GPU here: a restart cannot help"
	case ClassNotYet:
		return "not yet: expected to clear by itself"
	case ClassNeedsOperator:
		return "needs an operator: a restart cannot help"
	}
	return ""
}

// observed is what the class table looks at in an initialization failure.
// That is the error, and what the host showed when it happened.
type observed struct {
	err     error
	present bool   // Present saw a device node given to this process
	hidden  string // the visibility settings that hide every device, `NAME="value"`; "" if none
}

func (f observed) op(ops ...string) bool {
	var de *DriverError
	if !errors.As(f.err, &de) {
		return false
	}
	for _, op := range ops {
		if de.Op == op {
			return true
		}
	}
	return false
}

// opPrefix reports whether f's call starts with prefix ("dlsym" for "dlsym
// cuDeviceTotalMem_v2").
func (f observed) opPrefix(prefix string) bool {
	var de *DriverError
	return errors.As(f.err, &de) && strings.HasPrefix(de.Op, prefix)
}

// classRule is one row of the class table. The first row whose match holds
// gives a failure its class.
type classRule struct {
	class Class
	what  string // for the package doc, which lists the table
	match func(f observed) bool
}

// classRules is the one table of initialization failures and their
// classes. The package doc lists it; a test checks that it does, row for row.
var classRules = []classRule{
	{ClassNoGPUHere, "the backend is not in this binary (its package not imported, or built without cgo)",
		func(f observed) bool { return errors.Is(f.err, ErrNotCompiled) }},
	{ClassNeedsOperator, "a library file the user named (GPUINIT_CUDA_LIBRARY, GPUINIT_HIP_LIBRARY…) that is not there, does not load, or is a second copy beside one loaded; a library found whose dependency is missing",
		func(f observed) bool {
			return f.opPrefix("dlopen GPUINIT_") || (errors.Is(f.err, ErrDriverMismatch) && f.opPrefix("dlopen"))
		}},
	{ClassNoGPUHere, "no driver library, or only the toolkit's link stub (CUDA 34)",
		func(f observed) bool { return errors.Is(f.err, ErrDriverNotFound) }},
	{ClassNoGPUHere, "a library that lacks a function the backend needs (dlsym), or answers what no driver does",
		func(f observed) bool {
			return f.opPrefix("dlsym") || (errors.Is(f.err, ErrDriverMismatch) && f.op("cuDeviceGetCount", "hipGetDeviceCount"))
		}},
	{ClassNoGPUHere, "a driver older than the backend's floor or RequireDriverVersion's (CUDA 35 too)",
		func(f observed) bool { return errors.Is(f.err, driver.ErrDriverTooOld) }},
	{ClassNotYet, "the system is not ready yet (CUDA 802: the fabric manager still starting)",
		func(f observed) bool { return errors.Is(f.err, driver.ErrNotReady) }},
	{ClassNoGPUHere, "no device, and a visibility setting leaves the driver none, as the driver reads it, whatever the host's devices (CUDA_VISIBLE_DEVICES empty, -1, gpu0 or 0,0; NVIDIA_VISIBLE_DEVICES=void; HIP_VISIBLE_DEVICES=-1)",
		func(f observed) bool { return errors.Is(f.err, ErrNoDevice) && f.hidden != "" }},
	{ClassNotYet, "no device, while a GPU device node is given to the process (/dev/nvidia0, /dev/kfd): the driver has not found the GPU yet",
		func(f observed) bool { return errors.Is(f.err, ErrNoDevice) && f.present }},
	{ClassNoGPUHere, "no device, and no GPU device node, whatever /proc or sysfs shows of the host (a container given no GPU, an AMD pod without /dev/kfd)",
		func(f observed) bool { return errors.Is(f.err, ErrNoDevice) }},
	// A preflight child's Go panic needs an operator, wherever its frame is.
	// The child runs package inits (those Go orders before device/backends,
	// which may be the program's own), then the check: the backend's Open,
	// Init and device query. A panic in an init is the program's bug. A
	// panic in the backend's Go code is that backend's bug, whatever the
	// driver answered. A driver is C, and its faults and aborts reach Go as
	// signals: those are crashes, the next row. A fresh child runs the same
	// code and panics again. Retried as not-yet, it would spend RetryFor,
	// then fail liveness into a restart that panics once more. The same
	// panic in the driver's init in process needs an operator too (the last
	// row).
	{ClassNeedsOperator, "a preflight child's Go panic, in the backend's Go code or in a package init the child runs: a fresh child panics again",
		func(f observed) bool {
			var pe *PreflightError
			return errors.As(f.err, &pe) && pe.Panicked
		}},
	{ClassNotYet, "a preflight child that hung past its deadline, or crashed: a signal ended it (a fault or abort in the driver's C code)",
		func(f observed) bool {
			var pe *PreflightError
			return errors.As(f.err, &pe) && (pe.Hung || pe.Crashed())
		}},
	{ClassNeedsOperator, "anything else: user-space and kernel driver differ (CUDA 803), forward compatibility on an unsupported GPU (804), 999 after suspend/resume, not permitted (800), a panic in the driver's init",
		func(observed) bool { return true }},
}

// classOf is the table's class for f.
func classOf(f observed) Class {
	for _, r := range classRules {
		if r.match(f) {
			return r.class
		}
	}
	return ClassNeedsOperator
}

// ClassOf returns the class of an initialization failure. That is what a
// Runtime's Init (or Err) returned, a *[NoBackendError], or a backend's own
// Init error.
//
// A Runtime decides the class when the failure happens. Whether the
// vendor's device nodes exist then decides "not yet" against "no GPU here".
// A backend's raw error is classified by the table alone, as if there were
// no device nodes. For auto's *NoBackendError the class is the most hopeful
// of its backends': [ClassNotYet], then [ClassNeedsOperator], then [ClassNoGPUHere].
// Anything that is not an initialization failure is [ClassNone], a caller's
// cancellation and [ErrClosed] included.
func ClassOf(err error) Class {
	if err == nil || errors.Is(err, ErrClosed) {
		return ClassNone
	}
	var nb *NoBackendError
	if errors.As(err, &nb) {
		best := ClassNone
		for _, f := range nb.Tried {
			best = max(best, ClassOf(f.Err))
		}
		return best
	}
	var f *failure
	if errors.As(err, &f) && f.class != ClassNone {
		return f.class
	}
	if !isInitFailure(err) {
		return ClassNone
	}
	return classOf(observed{err: err})
}

// isInitFailure reports whether err is one that an initialization gives. It
// is a failure lazy memoized, a preflight child's, or ErrNotCompiled. Or it
// is a driver's error that is not from a call on a running device: not a
// sticky code, a lost device, or a library for an optional feature.
func isInitFailure(err error) bool {
	var ie *lazy.InitError
	var qe *lazy.DeferredError
	var pe *PreflightError
	if errors.As(err, &ie) || errors.As(err, &qe) || errors.As(err, &pe) || errors.Is(err, ErrNotCompiled) {
		return true
	}
	var de *DriverError
	return errors.As(err, &de) && !de.Sticky && !errors.Is(err, ErrDeviceLost) && !errors.Is(err, ErrNotSupported)
}

// FallBackToCPU reports whether err says this host has no GPU to use. A
// server that can serve on the CPU then should. The class is [ClassNoGPUHere]:
// no driver, no device given to this process, every GPU hidden on purpose,
// or a binary without a GPU backend. It is false where a GPU is there but
// broken or misconfigured ([ClassNeedsOperator]: stay unready and alert). It is
// false where the GPU is not ready yet ([ClassNotYet]: wait, or let liveness
// restart the process).
//
//	if err := rt.Init(ctx); device.FallBackToCPU(err) {
//		serveOnCPU() // err says why there is no GPU
//	} else if err != nil {
//		return err // stay unready: device.ClassOf(err) says who must act
//	}
func FallBackToCPU(err error) bool { return ClassOf(err) == ClassNoGPUHere }

// classify gives a backend's failure its class, as the host shows now. A
// no-device failure's class comes from evidence. The evidence is the
// visibility settings, and whether a GPU device node is given to this
// process. It is kept in the error, since a status must say why "no GPU" or
// "not yet".
func classify(reg driver.Registration, err error) error {
	o := observed{err: err}
	var evidence string
	if reg.Present != nil {
		o.present, evidence = reg.Present()
	}
	if hiding := drivercodes.HidingFor(reg.Visibility); len(hiding) > 0 {
		o.hidden = strings.Join(hiding, " and ")
	}
	f := &failure{class: classOf(o), causes: []error{err}}
	if errors.Is(err, ErrNoDevice) && !errors.Is(err, driver.ErrNotReady) && !isPreflightError(err) {
		switch {
		case o.hidden != "" && f.class == ClassNoGPUHere:
			f.evidence = o.hidden + " hides every GPU"
		case f.class == ClassNotYet:
			f.evidence = evidence + ", so the GPU may not be ready yet"
		case evidence != "":
			f.evidence = evidence
		}
	}
	return f
}

func isPreflightError(err error) bool {
	_, ok := err.(*PreflightError)
	return ok
}
