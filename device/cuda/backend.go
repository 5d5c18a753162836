//go:build linux && cgo && !nocuda

package cuda

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/loader"
)

// open gives every registry the process's one backend; unavailable is empty:
// this build has it.
var (
	open        = func() (driver.Backend, error) { return process, nil }
	unavailable = ""
)

// process is the process's one CUDA backend: the driver is loaded and
// initialized once per process, whichever Runtime asks first.
var process = &Backend{}

// MinDriverVersion is the oldest driver this backend supports: the API level
// of the functions it needs (cuDevicePrimaryCtxRelease_v2 arrived with CUDA
// 11.0, driver R450). A server raises it with device.Runtime's
// RequireDriverVersion.
const MinDriverVersion = 11000

// Backend is the CUDA driver, loaded at the first Init. Its methods are safe
// for concurrent use; the driver's state is the process's, so every Backend
// value shares it, and Init's result is memoized for the process.
type Backend struct {
	timing *watchTiming // the health watch's pacing; nil: productionTiming (a test's Backend sets its own)
}

// state is what the first Init learned, published as it learns it: the
// library, then the version (read before cuInit, so that it is known when
// cuInit fails), then the device count once cuInit succeeded.
var state struct {
	lib     atomic.Pointer[loader.Library]
	version atomic.Int64 // cuDriverGetVersion; 0 until read
	count   atomic.Int64 // cuDeviceGetCount after cuInit; -1 until it succeeded
}

func init() { state.count.Store(-1) }

// initOnce is the process's one initialization of the driver.
var initOnce = loader.OnceFunc(initialize)

// Name returns "cuda".
func (*Backend) Name() string { return "cuda" }

// Init loads libcuda.so.1 (see the package doc for where it looks), checks the
// driver's version against MinDriverVersion, and calls cuInit(0), once per
// process; later calls return the first one's result, a panic in it included
// (as a *lazy.PanicError). The driver cannot be interrupted, so ctx is not
// consulted.
func (*Backend) Init(context.Context) error { return initOnce() }

func initialize() error {
	lib, err := loadDriver()
	if err != nil {
		return err
	}
	state.lib.Store(&lib)
	v, r := api.driverGetVersion()
	if err := check("cuDriverGetVersion", r); err != nil {
		// The toolkit's stub answers 34 to its first call, this one: name the
		// file loaded, since that is what to fix.
		if de := (*driver.DriverError)(nil); r == 34 && errors.As(err, &de) && lib.Path != "" {
			if de.Message == "" { // the stub's cuGetErrorString has no words for it
				de.Message = "CUDA driver is a stub library"
			}
			de.Message += " (loaded " + lib.Path + ")"
		}
		return err
	}
	state.version.Store(int64(v))
	if v < MinDriverVersion {
		return &driver.DriverError{Backend: "cuda", Op: "cuDriverGetVersion", Sentinel: driver.ErrDriverTooOld,
			Message: fmt.Sprintf("the driver supports CUDA %s (%d), this backend needs CUDA %s (%d)", cudaVersion(v), v, cudaVersion(MinDriverVersion), MinDriverVersion),
			Hint:    "upgrade the NVIDIA driver to one that supports CUDA " + cudaVersion(MinDriverVersion) + " or later (nvidia-smi shows the CUDA version the driver supports)"}
	}
	if err := check("cuInit", api.init()); err != nil {
		return drivercodes.WithNVModuleHint(drivercodes.WithVisibilityHint(err, drivercodes.CUDAHiding))
	}
	n, r := api.deviceGetCount()
	if err := check("cuDeviceGetCount", r); err != nil {
		return err
	}
	if n < 0 {
		return &driver.DriverError{Backend: "cuda", Op: "cuDeviceGetCount", Sentinel: driver.ErrDriverMismatch,
			Message: fmt.Sprintf("the driver reports %d devices, which no NVIDIA driver does (loaded %s)", n, lib.Path),
			Hint:    "the library loaded is not a working libcuda: check " + EnvLibrary + " and reinstall the NVIDIA driver"}
	}
	primaries = make([]primarySlot, n)
	state.count.Store(int64(n))
	return nil
}

// cudaVersion spells 12020 as "12.2".
func cudaVersion(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// DriverVersion reports the version cuDriverGetVersion gave at Init, which
// reads it before cuInit, so it is known even when cuInit fails. Before Init it
// loads nothing and returns an error wrapping driver.ErrNotInitialized.
func (*Backend) DriverVersion() (int, error) {
	if v := state.version.Load(); v != 0 {
		return int(v), nil
	}
	return 0, fmt.Errorf("cuda: libcuda is loaded at the first Init, and this process has not loaded it: %w", driver.ErrNotInitialized)
}

// DriverInitialized reports whether this process's CUDA driver is initialized
// already: by this backend's Init, or by a cgo engine (llama.cpp, TensorRT)
// that loaded libcuda and called cuInit before gpuinit did. It loads and
// initializes nothing. A Runtime runs no preflight child then: there is
// nothing left to protect the process from.
func (*Backend) DriverInitialized() bool {
	return state.count.Load() >= 0 || initializedElsewhere()
}

// Count reports the device count cuDeviceGetCount gave at Init (devices do
// not come or go after cuInit). Before a successful Init it answers as the
// driver would, CUDA_ERROR_NOT_INITIALIZED, without loading anything.
func (*Backend) Count() (int, error) {
	n := state.count.Load()
	if n < 0 {
		return 0, codeError("cuDeviceGetCount", 3)
	}
	return int(n), nil
}

// Device reads one device's name, total memory, compute capability,
// multiprocessor count, integrated flag, PCI bus id and UUID.
func (*Backend) Device(ordinal int) (driver.Info, error) {
	if err := checkOrdinal("cuDeviceGet", ordinal); err != nil {
		return driver.Info{}, err
	}
	return describe(ordinal)
}

// checkOrdinal is nil for a device of an initialized driver, else the error
// op would get: not initialized, or an invalid ordinal with the range.
func checkOrdinal(op string, ordinal int) error {
	n := state.count.Load()
	switch {
	case n < 0:
		return codeError(op, 3)
	case ordinal < 0 || int64(ordinal) >= n:
		return fmt.Errorf("cuda: ordinal %d of %d devices: %w", ordinal, n, driver.ErrInvalidDevice)
	}
	return nil
}

// check turns a CUresult into an error: nil for CUDA_SUCCESS, else a
// *driver.DriverError with the driver's own name and description where it
// has them, and the table's sentinel and hint.
func check(op string, r result) error {
	if r == 0 {
		return nil
	}
	name, desc := errorStrings(r)
	return drivercodes.CUDA.Error(op, r, name, desc)
}

// notLoaded is what shim.h's UUID helpers return when the driver has neither
// UUID call; no other call returns it.
const notLoaded = -1

// codeError is the table's error for code, without asking the driver.
func codeError(op string, code int) error { return drivercodes.CUDA.Error(op, code, "", "") }

// DriverError classifies a CUresult that a server's engine got from its own
// CUDA call op, with the driver's own name and description where the driver
// is loaded: sticky codes (700, 719, 214 and the others the driver documents
// as leaving the context unusable) are marked so.
func (*Backend) DriverError(op string, code int) *driver.DriverError {
	if lib := state.lib.Load(); lib != nil && lib.Path != "" {
		name, desc := errorStrings(code)
		return drivercodes.CUDA.Error(op, code, name, desc)
	}
	return classify(op, code)
}
