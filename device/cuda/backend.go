//go:build linux && cgo && !nocuda

package cuda

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/dynload"
)

func init() {
	device.Register("cuda", func() (device.Backend, error) { return process, nil })
}

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
type Backend struct{}

// driver is what the first Init learned. Its fields are written once, by
// that Init, before done closes; read them only after done has closed.
var driver = struct {
	once    sync.Once
	done    chan struct{}
	lib     dynload.Library
	version int   // cuDriverGetVersion, read before cuInit; 0 if unknown
	count   int   // cuDeviceGetCount after cuInit: the devices do not change after
	err     error // the memoized result of Init
	ready   bool  // cuInit succeeded
}{done: make(chan struct{})}

// Name returns "cuda".
func (*Backend) Name() string { return "cuda" }

// Init loads libcuda.so.1 (see the package doc for where it looks), checks the
// driver's version against the floor, and calls cuInit(0), once per process;
// later calls return the first one's result. The driver cannot be interrupted,
// so ctx is not consulted for cancellation; device.MinDriverVersion(ctx, "cuda") raises
// the floor.
func (*Backend) Init(ctx context.Context) error {
	driver.once.Do(func() {
		defer close(driver.done)
		driver.err = initDriver(ctx)
	})
	return driver.err
}

func initDriver(ctx context.Context) error {
	lib, err := loadDriver()
	if err != nil {
		return err
	}
	driver.lib = lib
	v, r := api.driverGetVersion()
	if err := check("cuDriverGetVersion", r); err != nil {
		// The toolkit's stub answers 34 to its first call, this one: name the
		// file loaded, since that is what to fix.
		if de := (*device.DriverError)(nil); r == 34 && errors.As(err, &de) && lib.Path != "" {
			de.Message += " (loaded " + lib.Path + ")"
		}
		return err
	}
	driver.version = v
	if need := max(MinDriverVersion, device.MinDriverVersion(ctx, "cuda")); v < need {
		return &device.DriverError{Backend: "cuda", Op: "cuDriverGetVersion", Sentinel: device.ErrDriverMismatch,
			Message: fmt.Sprintf("the driver supports CUDA %s (%d), this process needs CUDA %s (%d)", cudaVersion(v), v, cudaVersion(need), need),
			Hint:    "upgrade the NVIDIA driver to one that supports CUDA " + cudaVersion(need) + " (nvidia-smi shows the CUDA version the driver supports)"}
	}
	if err := check("cuInit", api.init()); err != nil {
		return drivercodes.WithVisibilityHint(err, drivercodes.CUDAHiding)
	}
	n, r := api.deviceGetCount()
	if err := check("cuDeviceGetCount", r); err != nil {
		return err
	}
	primaries = make([]primarySlot, n)
	driver.count, driver.ready = n, true
	return nil
}

// cudaVersion spells 12020 as "12.2".
func cudaVersion(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// DriverVersion reports the version cuDriverGetVersion gave at Init, which
// reads it before cuInit, so it is known even when cuInit fails. Before Init it
// loads nothing and returns an error wrapping device.ErrNotInitialized.
func (*Backend) DriverVersion() (int, error) {
	if !initDone() || driver.version == 0 {
		return 0, fmt.Errorf("%w: cuda: libcuda is loaded at the first Init, and this process has not loaded it", device.ErrNotInitialized)
	}
	return driver.version, nil
}

// initDone reports whether the first Init has finished, without waiting for
// one in progress.
func initDone() bool {
	select {
	case <-driver.done:
		return true
	default:
		return false
	}
}

// Count reports the device count cuDeviceGetCount gave at Init (devices do
// not come or go after cuInit). Before a successful Init it answers as the
// driver would, CUDA_ERROR_NOT_INITIALIZED, without loading anything.
func (*Backend) Count() (int, error) {
	if err := ready("cuDeviceGetCount"); err != nil {
		return 0, err
	}
	return driver.count, nil
}

// Device reads one device's name, total memory, compute capability,
// multiprocessor count, integrated flag, PCI bus id and UUID.
func (*Backend) Device(ordinal int) (device.Info, error) {
	if err := checkOrdinal("cuDeviceGet", ordinal); err != nil {
		return device.Info{}, err
	}
	return describe(ordinal)
}

func ready(op string) error {
	if !initDone() || !driver.ready {
		return codeError(op, 3)
	}
	return nil
}

// checkOrdinal is nil for a device of an initialized driver, else the error
// op would get: not initialized, or an invalid ordinal with the range.
func checkOrdinal(op string, ordinal int) error {
	if err := ready(op); err != nil {
		return err
	}
	if ordinal < 0 || ordinal >= driver.count {
		return fmt.Errorf("%w: cuda: ordinal %d of %d devices", device.ErrInvalidDevice, ordinal, driver.count)
	}
	return nil
}

// check turns a CUresult into an error: nil for CUDA_SUCCESS, else a
// *device.DriverError with the driver's own name and description where it
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
func (*Backend) DriverError(op string, code int) *device.DriverError {
	if initDone() && driver.lib.Path != "" {
		name, desc := errorStrings(code)
		return drivercodes.CUDA.Error(op, code, name, desc)
	}
	return drivercodes.CUDA.Error(op, code, "", "")
}
