package driver

import (
	"errors"
	"fmt"
)

// Sentinel errors. Backends wrap raw driver codes in a *DriverError whose Is
// reports the sentinel the code means, so callers test with errors.Is.
// Their texts carry no package prefix: a message says its context first,
// with the one prefix of the package that returns it, and the sentinel
// last, as in "device: ordinal 5: sim has 2 devices, valid ordinals are
// 0..1: invalid device ordinal".
var (
	// ErrNoDevice: the driver works but sees no usable GPU.
	ErrNoDevice = errors.New("no GPU device found")
	// ErrDriverNotFound: the driver library or kernel module is missing.
	ErrDriverNotFound = errors.New("GPU driver not found")
	// ErrDriverMismatch: the driver is too old for the runtime, lacks a
	// function this backend needs, or its user and kernel parts differ.
	ErrDriverMismatch = errors.New("GPU driver version mismatch")
	// ErrInvalidDevice: an ordinal outside 0..count-1.
	ErrInvalidDevice = errors.New("invalid device ordinal")
	// ErrNotCompiled: the backend is not in this binary, because its package
	// was not imported or because the build could not have it (no cgo).
	ErrNotCompiled = errors.New("backend not compiled in")
	// ErrNotSupported: the backend lacks an optional feature, or the library
	// that provides it (generators without libcurand) could not be loaded.
	ErrNotSupported = errors.New("not supported by this backend")
	// ErrNotInitialized: the backend cannot answer before Init without
	// initializing, and it never initializes on its own.
	ErrNotInitialized = errors.New("not initialized yet")
	// ErrBadSetting: a setting the user gave (a GPUINIT_* variable, an
	// argument) has a value that cannot be used. The error names it.
	ErrBadSetting = errors.New("bad setting")

	// ErrDriverTooOld: the driver is older than the backend, or the server
	// (RequireDriverVersion), needs. It wraps ErrDriverMismatch.
	ErrDriverTooOld = fmt.Errorf("the driver is older than needed: %w", ErrDriverMismatch)
	// ErrNotReady: the driver is up but the system is not ready yet, such as
	// CUDA 802 while the fabric manager starts. It wraps ErrNoDevice.
	ErrNotReady = fmt.Errorf("the system is not ready yet: %w", ErrNoDevice)

	// ErrDeviceLost: the device is unusable for the rest of the process (a
	// sticky error, a fatal Xid, a call past its deadline).
	ErrDeviceLost = errors.New("device lost")
	// ErrDeviceHung: the device was lost because a call into its driver ran
	// past the call deadline. It wraps ErrDeviceLost.
	ErrDeviceHung = fmt.Errorf("a call into its driver hung: %w", ErrDeviceLost)
	// ErrInitHung: the driver's initialization did not finish within its
	// deadline (a preflight child that hung).
	ErrInitHung = errors.New("the driver's initialization hung")
	// ErrOtherVendor: auto chose another backend while the host shows this
	// one's devices too (a host with NVIDIA and AMD GPUs).
	ErrOtherVendor = errors.New("another vendor's GPUs are present")
)

// DriverError is a failed driver call, with the raw code and its name as the
// vendor library gives them, and a hint for the person reading the log. A
// library that could not be loaded is a DriverError too, with Op "dlopen",
// Code 0, the loader's own message and the names tried.
type DriverError struct {
	Backend string // "cuda", "hip", "sim"
	Op      string // the call that failed, e.g. "cuInit", or "dlopen"
	Code    int    // the raw driver code, e.g. 100; 0 for a loader failure
	Name    string // the code's name, e.g. "CUDA_ERROR_NO_DEVICE"
	Message string // the driver's (or the loader's) description
	Hint    string // what to check or do next; may be empty
	// Detail is more about the failure, for a log or a status that wants
	// it (the loader's own message and every file it tried); Error leaves
	// it out, so that the message stays one a person reads once.
	Detail   string
	Sentinel error // the sentinel this code means, or nil
	// Sticky reports that the code leaves the device unusable for the rest
	// of the process (CUDA 700, 719, 214 and the like).
	Sticky bool
}

// Error says which backend and call failed, with the raw code, its name, the
// driver's description and the hint.
func (e *DriverError) Error() string {
	s := e.Backend + ": " + e.Op + " failed"
	if e.Name != "" || e.Code != 0 {
		s += fmt.Sprintf(": %s (%d)", e.Name, e.Code)
	}
	if e.Message != "" && e.Message != e.Name {
		s += ": " + e.Message
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// Is reports whether target is the sentinel this driver code maps onto, or
// one that sentinel wraps (ErrDriverTooOld is an ErrDriverMismatch too).
func (e *DriverError) Is(target error) bool {
	return e.Sentinel != nil && errors.Is(e.Sentinel, target)
}

// Code is what a backend knows of one raw driver code beyond the driver's own
// strings.
type Code struct {
	Name     string // used when the driver cannot name the code
	Sentinel error  // the sentinel the code means, or nil
	Hint     string // what to check or do next
	Sticky   bool   // the code leaves the device unusable for the process
}

// CodeTable maps one backend's raw codes (a CUresult, a hipError_t, a cuRAND
// status) onto names, sentinels and hints, for building DriverErrors.
type CodeTable struct {
	Backend string       // "cuda", "hip"
	Unnamed string       // the name of a code that neither the driver nor Codes names, e.g. "CUresult"
	Codes   map[int]Code // the codes users meet
}

// Error builds the DriverError for op's raw code. name and message are the
// driver's own strings where it gave them; the table fills in the rest.
func (t *CodeTable) Error(op string, code int, name, message string) *DriverError {
	info := t.Codes[code]
	if name == "" {
		name = info.Name
	}
	if name == "" {
		name = t.Unnamed
	}
	return &DriverError{Backend: t.Backend, Op: op, Code: code, Name: name, Message: message,
		Hint: info.Hint, Sentinel: info.Sentinel, Sticky: info.Sticky}
}
