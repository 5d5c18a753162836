//go:build linux && cgo && !nohip

package hip

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/dynload"
	"github.com/gpuinit/gpuinit/device/internal/kfd"
)

func init() {
	device.Register("hip", func() (device.Backend, error) { return process, nil })
}

// process is the process's one HIP backend: the runtime is loaded and
// initialized once per process, whichever Runtime asks first.
var process = &Backend{}

// Backend is the HIP runtime, loaded at the first Init. Its methods are safe
// for concurrent use; the runtime's state is the process's, so every Backend
// value shares it, and Init's result is memoized for the process.
type Backend struct{}

// runtime is what the first Init learned. Its fields are written once, by
// that Init, before done closes; read them only after done has closed.
var runtime = struct {
	once           sync.Once
	done           chan struct{}
	lib            dynload.Library
	driverVersion  int // hipDriverGetVersion, read after hipInit; 0 if unknown
	runtimeVersion int
	busIDs         []string   // each device's PCI bus id, lower case, read at Init
	nodes          []kfd.Node // the KFD topology, read at Init; nil where there is none
	gfxOverride    int        // HSA_OVERRIDE_GFX_VERSION as a gfx target version, or 0
	err            error
	ready          bool
}{done: make(chan struct{})}

// Name returns "hip".
func (*Backend) Name() string { return "hip" }

// Init loads libamdhip64 (see the package doc for where it looks) and calls
// hipInit(0), once per process; later calls return the first one's result.
// Then, and not before, it reads the driver and runtime versions, since HIP's
// version calls initialize the runtime themselves, and checks them against
// device.MinDriverVersion(ctx, "hip"). The runtime cannot be interrupted, so ctx is
// not consulted for cancellation.
func (*Backend) Init(ctx context.Context) error {
	runtime.once.Do(func() {
		defer close(runtime.done)
		runtime.err = initRuntime(ctx)
	})
	return runtime.err
}

// withNoDeviceHints prefixes a no-device error's hint with what is wrong with
// /dev/kfd and which variable hides every GPU, if either.
func withNoDeviceHints(err error) error {
	return drivercodes.WithVisibilityHint(drivercodes.WithKFDHint(err), drivercodes.HIPHiding)
}

func initRuntime(ctx context.Context) error {
	lib, err := loadRuntime()
	if err != nil {
		return err
	}
	runtime.lib = lib
	if err := check("hipInit", hipInit()); err != nil {
		return withNoDeviceHints(err)
	}
	var r int
	if runtime.driverVersion, r = driverGetVersion(); r != 0 {
		return check("hipDriverGetVersion", r)
	}
	runtime.runtimeVersion, _ = runtimeGetVersion()
	if need := device.MinDriverVersion(ctx, "hip"); runtime.driverVersion < need {
		return &device.DriverError{Backend: "hip", Op: "hipDriverGetVersion", Sentinel: device.ErrDriverMismatch,
			Message: fmt.Sprintf("the HIP driver reports %d, this process needs %d", runtime.driverVersion, need),
			Hint:    "upgrade ROCm (and the amdgpu kernel driver) to the version the server's engine was built for"}
	}
	// hipGetDeviceCount answers 100 with a count of 0 where hipInit let a
	// host without a GPU through; no device is ErrNoDevice either way.
	n, r := getDeviceCount()
	if r == 0 && n == 0 {
		r = 100
	}
	if err := check("hipGetDeviceCount", r); err != nil {
		return withNoDeviceHints(err)
	}
	runtime.busIDs = make([]string, n)
	for i := range runtime.busIDs {
		id, r := deviceGetPCIBusID(i)
		if r != 0 {
			return check("hipDeviceGetPCIBusId", r)
		}
		runtime.busIDs[i] = strings.ToLower(id)
	}
	override, ok, err := kfd.Override()
	if err != nil {
		return &device.DriverError{Backend: "hip", Op: "HSA_OVERRIDE_GFX_VERSION", Sentinel: device.ErrDriverMismatch,
			Message: err.Error(), Hint: "unset it, or set it to a gfx target the ROCm libraries support, such as 10.3.0"}
	}
	if ok {
		runtime.gfxOverride = override
	}
	runtime.nodes, _ = kfd.Nodes(kfd.Root()) // no topology: arch and UUID stay unknown
	runtime.ready = true
	return nil
}

// DriverVersion reports the version hipDriverGetVersion gave at Init. HIP's
// version call initializes the runtime, so before Init this loads and calls
// nothing and returns an error wrapping device.ErrNotInitialized.
func (*Backend) DriverVersion() (int, error) {
	if !initDone() || runtime.driverVersion == 0 {
		return 0, fmt.Errorf("%w: hip: the version is read at the first Init, since asking HIP for it initializes the runtime", device.ErrNotInitialized)
	}
	return runtime.driverVersion, nil
}

// RuntimeVersion reports hipRuntimeGetVersion's answer from Init, under
// DriverVersion's rules.
func (*Backend) RuntimeVersion() (int, error) {
	if !initDone() || runtime.runtimeVersion == 0 {
		return 0, fmt.Errorf("%w: hip: the version is read at the first Init", device.ErrNotInitialized)
	}
	return runtime.runtimeVersion, nil
}

func initDone() bool {
	select {
	case <-runtime.done:
		return true
	default:
		return false
	}
}

// Count reports the device count hipGetDeviceCount gave at Init (devices do
// not come or go after hipInit). Before a successful Init it answers
// hipErrorNotInitialized without loading anything.
func (*Backend) Count() (int, error) {
	if err := ready("hipGetDeviceCount"); err != nil {
		return 0, err
	}
	return len(runtime.busIDs), nil
}

// Device reads one device's name and total memory from HIP, takes the PCI bus
// id Init read, and reads its gfx target (Arch, with HSA_OVERRIDE_GFX_VERSION applied), UUID, compute
// units and integrated flag from the KFD topology, matched by PCI bus id.
// ComputeMajor and ComputeMinor stay zero: HIP reports gfx90a as 9.0, which
// reads as Hopper.
func (b *Backend) Device(ordinal int) (device.Info, error) {
	if err := checkOrdinal("Device", ordinal); err != nil {
		return device.Info{}, err
	}
	info := device.Info{Ordinal: ordinal, PCIBusID: runtime.busIDs[ordinal]}
	var r int
	if info.Name, r = deviceGetName(ordinal); r != 0 {
		return device.Info{}, check("hipDeviceGetName", r)
	}
	if info.TotalMemory, r = deviceTotalMem(ordinal); r != 0 {
		return device.Info{}, check("hipDeviceTotalMem", r)
	}
	if node, ok := kfd.Find(runtime.nodes, info.PCIBusID); ok {
		target := node.GfxTarget
		if runtime.gfxOverride != 0 {
			target = runtime.gfxOverride
		}
		info.Arch = kfd.Arch(target)
		info.UUID = kfd.UUID(node.UniqueID)
		info.Multiprocessors = node.ComputeUnits
		info.Integrated = node.Integrated
	}
	return info, nil
}

func ready(op string) error {
	if !initDone() || !runtime.ready {
		return codeError(op, 3)
	}
	return nil
}

// checkOrdinal is nil for a device of an initialized runtime, else the error
// op would get: not initialized, or an invalid ordinal with the range.
func checkOrdinal(op string, ordinal int) error {
	if err := ready(op); err != nil {
		return err
	}
	if n := len(runtime.busIDs); ordinal < 0 || ordinal >= n {
		return fmt.Errorf("%w: hip: ordinal %d of %d devices", device.ErrInvalidDevice, ordinal, n)
	}
	return nil
}

// check turns a hipError_t into an error: nil for hipSuccess, else a
// *device.DriverError with HIP's own name and description where it has them.
func check(op string, r int) error {
	if r == 0 {
		return nil
	}
	name, desc := errorStrings(r)
	return drivercodes.HIPError(op, r, name, desc)
}

func codeError(op string, code int) error { return drivercodes.HIPError(op, code, "", "") }

// DriverError classifies a hipError_t that a server's engine got from its own
// HIP call op: sticky codes (700, 719, 214, ...) are marked so.
func (*Backend) DriverError(op string, code int) *device.DriverError {
	if initDone() && runtime.lib.Path != "" {
		name, desc := errorStrings(code)
		return drivercodes.HIPError(op, code, name, desc)
	}
	return drivercodes.HIPError(op, code, "", "")
}
