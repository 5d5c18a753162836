// Package device is gpuinit's backend-neutral GPU runtime. Open returns the one
// Runtime of a backend (cuda, hip, sim, or auto: the first GPU backend that
// works) without touching the driver; the first call that needs the devices
// (Init, DeviceCount, Device, Devices, MemoryInfo, Do) initializes it, once per
// process, through package lazy: work queued with
// LazyCall before then is replayed right after the driver's init, in order, and
// may re-enter the Runtime without deadlocking. Failures are memoized and carry
// the driver's raw code, its name and a hint.
//
// Backends register themselves with Register when their package is imported;
// import package backends to link every backend the build can have.
package device

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gpuinit/gpuinit/lazy"
)

// Runtime is one backend's lazily initialized state. It is safe for concurrent
// use. Open returns one Runtime per backend per process; New makes a private one.
type Runtime struct {
	init     *lazy.Initializer
	selector *selector // the GPU runtime's chooser; nil for a fixed backend

	backend    atomic.Pointer[Backend]           // the backend; for a selector, the choice once made
	devices    atomic.Pointer[[]Info]            // stored once by the initialization, before the queue drains
	floor      driverFloors                      // RequireDriverVersion's floors, read by initialize
	visibility atomic.Pointer[map[string]string] // the visibility settings seen at initialization
	lost       lostDevices                       // errors reported by the server's engine
}

// New returns a Runtime for b that Open does not share: for tests and for
// programs that bring their own Backend. Nothing is called on b until first use
// but Name.
func New(b Backend, opts ...lazy.Option) *Runtime {
	r := &Runtime{}
	r.backend.Store(&b)
	r.init = lazy.New(r.initialize, opts...)
	return r
}

// newGPURuntime is the Runtime over a selector of candidate GPU backends.
func newGPURuntime(candidates []string) *Runtime {
	s := &selector{candidates: candidates}
	r := New(s)
	r.selector = s
	return r
}

func (r *Runtime) initialize(ctx context.Context) error {
	ctx = r.withDriverFloors(ctx)
	seen := readVisibility()
	r.visibility.Store(&seen)
	var b Backend
	var n int
	if r.selector != nil {
		var err error
		if b, n, err = r.selector.choose(ctx); err != nil {
			return err
		}
		r.backend.Store(&b)
		chose(r, b.Name())
	} else {
		b = r.Backend()
		if err := b.Init(ctx); err != nil {
			return err
		}
		if err := checkDriverFloor(ctx, b); err != nil {
			return err
		}
		var err error
		if n, err = b.Count(); err != nil {
			return err
		}
	}
	devices := make([]Info, n)
	for i := range devices {
		var err error
		if devices[i], err = b.Device(i); err != nil {
			return err
		}
		devices[i].Ordinal = i
	}
	r.devices.Store(&devices)
	return nil
}

// PassedOver reports the GPU backends that the GPU runtime's first Init tried
// and passed over before its choice (or before failing), with each one's
// reason, in the order tried; nil for a Runtime of a fixed backend.
func (r *Runtime) PassedOver() []BackendFailure {
	if r.selector == nil {
		return nil
	}
	return r.selector.passed()
}

// Backend returns the backend, for its optional interfaces and its own methods:
// for the GPU runtime, the backend chosen at Init, and before that an internal
// chooser. Calling into it directly bypasses the lazy initialization.
func (r *Runtime) Backend() Backend { return *r.backend.Load() }

// Name is the backend's name: for the GPU runtime, "auto" until Init chooses
// (or the one backend it was pinned to), then the choice.
func (r *Runtime) Name() string { return r.Backend().Name() }

// Init initializes the backend on first call and returns the memoized result:
// the driver's init, the device information, then the work queued by LazyCall.
// See lazy.Initializer.Init for cancellation and re-entry.
func (r *Runtime) Init(ctx context.Context) error { return r.init.Init(ctx) }

// LazyCall runs fn now if the Runtime is initialized, else queues it to run right
// after initialization; it never initializes. See lazy.Initializer.Call.
func (r *Runtime) LazyCall(ctx context.Context, fn lazy.Func) error {
	return r.init.CallDepth(ctx, 1, fn)
}

// LazyCallDepth is LazyCall for wrappers: the call site recorded for a queued fn
// is depth frames above LazyCallDepth's caller.
func (r *Runtime) LazyCallDepth(ctx context.Context, depth int, fn lazy.Func) error {
	return r.init.CallDepth(ctx, depth+1, fn)
}

// State reports the initialization state without initializing.
func (r *Runtime) State() lazy.State { return r.init.State() }

// InitTimes reports when the initialization started and finished; a time not
// reached yet is zero. It never waits.
func (r *Runtime) InitTimes() (started, finished time.Time) { return r.init.Times() }

// Running reports what the initialization runs now, while it runs: "init" for
// the driver's own initialization, or the call site of a queued function, and
// since when. See lazy.Initializer.Running.
func (r *Runtime) Running() (what string, since time.Time, ok bool) { return r.init.Running() }

// Err returns the memoized initialization failure without initializing: nil
// unless the state is lazy.Failed.
func (r *Runtime) Err() error {
	if r.init.State() != lazy.Failed {
		return nil
	}
	return r.init.Init(context.Background()) // memoized: returns at once
}

// IsInitialized reports whether initialization has succeeded, without
// initializing, like torch.cuda.is_initialized.
func (r *Runtime) IsInitialized() bool { return r.init.State() == lazy.Ready }

// DriverVersion asks the backend for the driver's version without initializing
// or loading anything; see Backend for what it can answer before Init.
func (r *Runtime) DriverVersion() (int, error) { return r.Backend().DriverVersion() }

// RuntimeVersion asks a RuntimeVersioner backend for its runtime version, under
// DriverVersion's rules; other backends get an error wrapping ErrNotSupported.
func (r *Runtime) RuntimeVersion() (int, error) {
	rv, ok := Capability[RuntimeVersioner](r.Backend())
	if !ok {
		return 0, fmt.Errorf("%w: backend %s reports no runtime version", ErrNotSupported, r.Name())
	}
	return rv.RuntimeVersion()
}

// DeviceCount initializes on first use and reports the number of devices.
func (r *Runtime) DeviceCount(ctx context.Context) (int, error) {
	if err := r.init.Init(ctx); err != nil {
		return 0, err
	}
	return len(*r.devices.Load()), nil
}

// Device initializes on first use and describes one device. An ordinal out of
// range gets an error wrapping ErrInvalidDevice with the valid range.
func (r *Runtime) Device(ctx context.Context, ordinal int) (Info, error) {
	if err := r.init.Init(ctx); err != nil {
		return Info{}, err
	}
	if err := r.CheckOrdinal(ordinal); err != nil {
		return Info{}, err
	}
	return (*r.devices.Load())[ordinal], nil
}

// Devices initializes on first use and describes every device; the slice is
// the caller's.
func (r *Runtime) Devices(ctx context.Context) ([]Info, error) {
	if err := r.init.Init(ctx); err != nil {
		return nil, err
	}
	return slices.Clone(*r.devices.Load()), nil
}

// CheckOrdinal returns nil if ordinal names a device, else an error wrapping
// ErrInvalidDevice that gives the valid range. It does not initialize: the
// device count is known once the driver's init has succeeded, which includes
// work queued with LazyCall. A negative ordinal is always invalid.
func (r *Runtime) CheckOrdinal(ordinal int) error {
	devices := r.devices.Load()
	switch {
	case ordinal < 0:
		return fmt.Errorf("%w: %d: ordinals start at 0", ErrInvalidDevice, ordinal)
	case devices == nil:
		return fmt.Errorf("%w: %d: the %s runtime is not initialized, so its devices are not known yet", ErrInvalidDevice, ordinal, r.Name())
	case len(*devices) == 0:
		return fmt.Errorf("%w: %d: %s has no devices", ErrInvalidDevice, ordinal, r.Name())
	case ordinal >= len(*devices):
		n := len(*devices)
		return fmt.Errorf("%w: %d: %s has %d devices, valid ordinals are 0..%d", ErrInvalidDevice, ordinal, r.Name(), n, n-1)
	}
	return nil
}
