//go:build linux && cgo && !nohip

package hip

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/host"
	"github.com/gpuinit/gpuinit/device/internal/loader"
)

// open gives every registry the process's one backend; unavailable is empty:
// this build has it.
var (
	open        = func() (driver.Backend, error) { return process, nil }
	unavailable = ""
)

// process is the process's one HIP backend: the runtime is loaded and
// initialized once per process, whichever Runtime asks first.
var process = &Backend{}

// Backend is the HIP runtime, loaded at the first Init. Its methods are safe
// for concurrent use; the runtime's state is the process's, so every Backend
// value shares it, and Init's result is memoized for the process.
type Backend struct {
	timing *watchTiming // the health watch's pacing; nil: productionTiming (a test's Backend sets its own)
}

// state is what the first Init learned, published as it learns it: the
// library, then, once hipInit and the device queries succeeded, the
// versions and the devices.
var state struct {
	lib   atomic.Pointer[loader.Library]
	ready atomic.Pointer[runtimeState]
}

// runtimeState is what a successful Init read; never modified once stored.
type runtimeState struct {
	driverVersion  int            // hipDriverGetVersion, read after hipInit
	runtimeVersion int            // hipRuntimeGetVersion; 0 if it failed
	busIDs         []string       // each device's PCI bus id, lower case
	nodes          []host.KFDNode // the KFD topology; nil where there is none
	targets        []target       // each device's gfx target, native and effective
	memory         []memoryPaths
}

// target is a device's gfx target: its own (from KFD), and what ROCm runs it
// as after HSA_OVERRIDE_GFX_VERSION(_<node>), which source names.
type target struct {
	native, effective int
	source            string
}

// initOnce is the process's one initialization of the runtime.
var initOnce = loader.OnceFunc(initialize)

// Name returns "hip".
func (*Backend) Name() string { return "hip" }

// Init loads libamdhip64 (see the package doc for where it looks) and calls
// hipInit(0), once per process; later calls return the first one's result, a
// panic in it included (as a *lazy.PanicError). Then, and not before, it
// reads the driver and runtime versions, since HIP's version calls
// initialize the runtime themselves. The runtime cannot be interrupted, so
// ctx is not consulted.
func (*Backend) Init(context.Context) error { return initOnce() }

// withNoDeviceHints prefixes a no-device error's hint with what is wrong with
// /dev/kfd and which variable hides every GPU, if either.
func withNoDeviceHints(err error) error {
	return drivercodes.WithVisibilityHint(drivercodes.WithKFDHint(err), drivercodes.HIPHiding)
}

func initialize() error {
	lib, err := loadRuntime()
	if err != nil {
		return err
	}
	state.lib.Store(&lib)
	if err := check("hipInit", hipInit()); err != nil {
		return withNoDeviceHints(err)
	}
	s := &runtimeState{}
	var r int
	if s.driverVersion, r = driverGetVersion(); r != 0 {
		return check("hipDriverGetVersion", r)
	}
	s.runtimeVersion, _ = runtimeGetVersion()
	// hipGetDeviceCount answers 100 with a count of 0 where hipInit let a
	// host without a GPU through; no device is ErrNoDevice either way.
	n, r := getDeviceCount()
	if r == 0 && n == 0 {
		r = 100
	}
	if err := check("hipGetDeviceCount", r); err != nil {
		return withNoDeviceHints(err)
	}
	if n < 0 {
		return &driver.DriverError{Backend: "hip", Op: "hipGetDeviceCount", Sentinel: driver.ErrDriverMismatch,
			Message: fmt.Sprintf("the runtime reports %d devices, which no HIP runtime does (loaded %s)", n, lib.Path),
			Hint:    "the library loaded is not a working libamdhip64: check " + EnvLibrary + " and reinstall ROCm's HIP runtime"}
	}
	s.busIDs = make([]string, n)
	for i := range s.busIDs {
		id, r := deviceGetPCIBusID(i)
		if r != 0 {
			return check("hipDeviceGetPCIBusId", r)
		}
		s.busIDs[i] = strings.ToLower(id)
	}
	s.nodes, _ = host.KFDNodes(host.Sys()) // no topology: arch and UUID stay unknown
	if err := s.readTargets(); err != nil {
		return err
	}
	s.memory = make([]memoryPaths, n)
	for i, bus := range s.busIDs {
		node, _ := host.FindKFDNode(s.nodes, bus)
		s.memory[i] = pathsFor(bus, node.Integrated)
	}
	state.ready.Store(s)
	return nil
}

// readTargets reads each device's native gfx target from KFD and applies
// ROCm's overrides to it as libhsakmt does: HSA_OVERRIDE_GFX_VERSION_<node>
// for the device's libhsakmt node id (CPU nodes count: the first GPU is
// usually node 1), else HSA_OVERRIDE_GFX_VERSION. A malformed value fails
// Init, naming the variable: libhsakmt then enumerates no GPU at all.
func (s *runtimeState) readTargets() error {
	ids, _ := host.KFDNodeIDsHost() // unknown ids: only the global override applies
	s.targets = make([]target, len(s.busIDs))
	for i, bus := range s.busIDs {
		node, _ := host.FindKFDNode(s.nodes, bus)
		id, ok := ids[bus]
		if !ok {
			id = -1
		}
		effective, source, err := host.EffectiveGfxTarget(node.GfxTarget, id, os.LookupEnv)
		if err != nil {
			return &driver.DriverError{Backend: "hip", Op: source, Sentinel: driver.ErrDriverMismatch,
				Message: err.Error(), Hint: "unset it, or set it to a gfx target the ROCm libraries support, such as 10.3.0; libhsakmt enumerates no GPU while it is malformed"}
		}
		s.targets[i] = target{native: node.GfxTarget, effective: effective, source: source}
	}
	return nil
}

// DriverVersion reports the version hipDriverGetVersion gave at Init. HIP's
// version call initializes the runtime, so before Init this loads and calls
// nothing and returns an error wrapping driver.ErrNotInitialized.
func (*Backend) DriverVersion() (int, error) {
	if s := state.ready.Load(); s != nil {
		return s.driverVersion, nil
	}
	return 0, fmt.Errorf("hip: the version is read at the first Init, since asking HIP for it initializes the runtime: %w", driver.ErrNotInitialized)
}

// RuntimeVersion reports hipRuntimeGetVersion's answer from Init, under
// DriverVersion's rules.
func (*Backend) RuntimeVersion() (int, error) {
	if s := state.ready.Load(); s != nil && s.runtimeVersion != 0 {
		return s.runtimeVersion, nil
	}
	return 0, fmt.Errorf("hip: the version is read at the first Init: %w", driver.ErrNotInitialized)
}

// DriverInitialized reports whether this backend's Init has brought the HIP
// runtime up in this process. It cannot tell whether a cgo engine did: every
// HIP call initializes the runtime, so there is no call that asks without
// doing it; a Runtime then runs its preflight child as usual.
func (*Backend) DriverInitialized() bool { return state.ready.Load() != nil }

// Count reports the device count hipGetDeviceCount gave at Init (devices do
// not come or go after hipInit). Before a successful Init it answers
// hipErrorNotInitialized without loading anything.
func (*Backend) Count() (int, error) {
	s := state.ready.Load()
	if s == nil {
		return 0, codeError("hipGetDeviceCount", 3)
	}
	return len(s.busIDs), nil
}

// checkOrdinal returns the initialized runtime's state if ordinal names one
// of its devices, else the error op would get: not initialized, or an
// invalid ordinal with the range.
func checkOrdinal(op string, ordinal int) (*runtimeState, error) {
	s := state.ready.Load()
	switch {
	case s == nil:
		return nil, codeError(op, 3)
	case ordinal < 0 || ordinal >= len(s.busIDs):
		return nil, fmt.Errorf("hip: ordinal %d of %d devices: %w", ordinal, len(s.busIDs), driver.ErrInvalidDevice)
	}
	return s, nil
}

// check turns a hipError_t into an error: nil for hipSuccess, else a
// *driver.DriverError with HIP's own name and description where it has them.
func check(op string, r int) error {
	if r == 0 {
		return nil
	}
	name, desc := errorStrings(r)
	return drivercodes.HIPError(op, r, name, desc)
}

func codeError(op string, code int) error { return drivercodes.HIPError(op, code, "", "") }

// DriverError classifies a hipError_t that a server's engine got from its own
// HIP call op, with the runtime's own name and description where it is
// loaded: sticky codes (700, 719, 214, ...) are marked so.
func (*Backend) DriverError(op string, code int) *driver.DriverError {
	if lib := state.lib.Load(); lib != nil && lib.Path != "" {
		name, desc := errorStrings(code)
		return drivercodes.HIPError(op, code, name, desc)
	}
	return classify(op, code)
}
