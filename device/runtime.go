// Package device is gpuinit's backend-neutral GPU runtime.
//
// [Open] returns the [Runtime] of a backend (cuda, hip, sim, or auto: the
// first GPU backend that works) without touching the driver; the first call
// that needs the devices ([Runtime.Init], [Runtime.DeviceCount],
// [Runtime.Devices], [Runtime.MemoryInfo], [Runtime.Do]) initializes it,
// once, through package lazy: work queued with [Runtime.LazyCall] before then
// is replayed right after the driver's init, in order, and may re-enter the
// Runtime without deadlocking. Failures are memoized and carry the driver's
// raw code, its name and a hint; [ClassOf] says whether to wait, fall back
// or call an operator. [Runtime.UsePreflight] runs the driver's init in a
// child process first, so that a driver that hangs or crashes takes the child
// down, not the server.
//
// After init the Runtime watches its devices: every driver call it makes runs
// under a deadline ([Runtime.SetCallDeadline]), the backend's health watch
// (NVML's Xid and ECC events, amdgpu's RAS counters) loses a device that
// needs a reset, and [Runtime.Canary] proves one still works. A lost device
// ([Runtime.Lost]) says who saw it lost. [Runtime.Close] stops the watches.
//
// Backends register with [Register] when their package is imported (import
// package backends to link every backend the build can have); what they
// implement is package driver's interface. A [Registry] other than
// [DefaultRegistry] gives a test or a program backends and Runtimes of its
// own.
//
// Each registry gives a name one Runtime. Two Runtimes over one backend, such
// as auto's and one opened by name before auto chose that backend, share the
// backend's process-wide driver state (cuda and hip initialize their driver
// once per process) but each keeps its own queue, devices and error reports.
//
// Every method that takes a context panics on a nil one, naming itself, as
// net/http does; none of them waits past its context's end.
package device

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/callwatch"
	"github.com/gpuinit/gpuinit/device/internal/healthwatch"
	"github.com/gpuinit/gpuinit/lazy"
)

// Runtime is one backend's lazily initialized state. It is safe for concurrent
// use. Open returns one Runtime per name per registry; New makes a private one.
type Runtime struct {
	init *lazy.Initializer

	// Set at creation, read-only after.
	registry   *Registry             // where auto opens its candidates; nil for New
	candidates []driver.Registration // tried in order by the first Init; one unless auto
	auto       bool

	chosen         atomic.Pointer[choice]            // the backend in use: from creation for a fixed backend, from the first Init for auto
	passedOver     atomic.Pointer[[]BackendFailure]  // auto's candidates that failed, in order
	devices        atomic.Pointer[[]Info]            // stored once by the initialization, before the queue drains
	settings       settings                          // what RequireDriverVersion and UsePreflight set, read by initialize
	bringUp        atomic.Pointer[BringUp]           // where the initialization stands; nil before it starts
	visibility     atomic.Pointer[map[string]string] // the visibility settings seen at initialization
	calls          atomic.Pointer[callwatch.Watch]   // watches calls into the devices' drivers, from a successful init on
	callDeadline   atomic.Int64                      // SetCallDeadline's, in nanoseconds; 0 is DefaultCallDeadline
	watch          atomic.Pointer[healthwatch.Watch] // the health watch and the losses, from a successful init on
	view           atomic.Pointer[view]              // what the watch knows, published for reads without a lock
	views          views
	canaries       sync.Map    // ordinal -> when its canary in flight started
	driverVersions sync.Map    // backend name -> the driver version it read before it failed
	stop           *stopping   // Close: nothing more starts, and preflights end
	failedCalls    failedCalls // queued calls that failed when they ran
}

// choice is a Runtime's backend and what it registered with.
type choice struct {
	reg     driver.Registration
	backend driver.Backend
}

// New returns a Runtime for b that no registry shares: for tests and for
// programs that bring their own Backend. Its registration is b's name alone
// (no generator ordering but the default, no classifier but b's own
// driver.ErrorClassifier); register b and Open it for more. Nothing is called
// on b until first use but Name.
func New(b driver.Backend, opts ...lazy.Option) *Runtime {
	return newRuntime(nil, []driver.Registration{{Name: b.Name()}}, false, b, opts...)
}

// newRuntime makes a Runtime over candidates; b, if not nil, is the opened
// backend of the only one.
func newRuntime(g *Registry, candidates []driver.Registration, auto bool, b driver.Backend, opts ...lazy.Option) *Runtime {
	r := &Runtime{registry: g, candidates: candidates, auto: auto, stop: newStopping()}
	r.view.Store(&view{})
	if b != nil {
		r.chosen.Store(&choice{reg: candidates[0], backend: b})
	}
	r.init = lazy.New(r.initialize, append(slices.Clip(opts), lazy.WithQueuedFailures(r.failedCalls.add))...)
	return r
}

// PassedOver reports the GPU backends that auto's first Init tried and passed
// over before its choice (or before failing), with each one's reason, in the
// order tried; and, after its choice, the GPU backends it never tried whose
// vendor's devices the host shows too, with a reason wrapping
// ErrOtherVendor. nil for a Runtime of a named backend.
func (r *Runtime) PassedOver() []BackendFailure {
	if p := r.passedOver.Load(); p != nil {
		return slices.Clone(*p)
	}
	return nil
}

// Backend returns the backend, for its optional interfaces and its own
// methods: a named backend's from Open (or New) on, auto's choice once its
// first Init has chosen, and nil before. Calling into it directly bypasses
// the lazy initialization.
func (r *Runtime) Backend() driver.Backend {
	if c := r.chosen.Load(); c != nil {
		return c.backend
	}
	return nil
}

// Registration returns what the backend registered with (for a Runtime made
// by New, its name only): once there is a Backend, and the zero Registration
// before.
func (r *Runtime) Registration() driver.Registration {
	if c := r.chosen.Load(); c != nil {
		return c.reg
	}
	return driver.Registration{}
}

// Name is the backend's name: for auto, "auto" until the first Init chooses,
// then the choice.
func (r *Runtime) Name() string {
	switch c := r.chosen.Load(); {
	case c != nil:
		return c.reg.Name
	case !r.auto:
		return r.candidates[0].Name
	}
	return "auto"
}

// Init initializes the backend on first call and returns the memoized result:
// the driver's init, the device information, then the work queued by LazyCall.
// See lazy.Initializer.Init for cancellation and re-entry.
// A nil ctx panics, naming Init.
func (r *Runtime) Init(ctx context.Context) error {
	nilContext(ctx, "Init")
	return r.init.Init(ctx)
}

// Start starts the initialization in the background, if nothing has, and
// returns at once: nil when it is under way or finished, an error wrapping
// ctx.Err() (and nothing started) when ctx is already done. See
// lazy.Initializer.Start.
// A nil ctx panics, naming Start.
func (r *Runtime) Start(ctx context.Context) error {
	nilContext(ctx, "Start")
	return r.init.Start(ctx)
}

// LazyCall runs fn now if the Runtime is initialized, else queues it to run right
// after initialization; it never initializes. See lazy.Initializer.Call.
//
// A queued fn's failure is its own call's: it does not fail the
// initialization, which every caller shares. It is recorded, with the call
// site that queued it (FailedCalls, and the health status), and the caller's
// package says it back as its kind of call has it (rng: the next call of the
// same method returns it). PyTorch instead raises the failure from whatever
// call initializes, and re-runs the whole queue at the next one; a failure
// there stops every later caller too. One request's bad ordinal must not
// take the GPU from every other request for the life of the process.
// A nil ctx panics, naming LazyCall.
func (r *Runtime) LazyCall(ctx context.Context, fn lazy.Func) error {
	nilContext(ctx, "LazyCall")
	return r.init.CallDepth(ctx, 1, fn)
}

// LazyCallDepth is LazyCall for wrappers: the call site recorded for a queued fn
// is depth frames above LazyCallDepth's caller.
// A nil ctx panics, naming LazyCallDepth.
func (r *Runtime) LazyCallDepth(ctx context.Context, depth int, fn lazy.Func) error {
	nilContext(ctx, "LazyCallDepth")
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
// or loading anything; see driver.Backend for what it can answer before Init.
// A backend that cannot answer in this process because its initialization
// failed in a preflight child (which alone loaded the library) answers with
// the version the child read. Otherwise, before auto has chosen there is no one driver to ask, and
// the error wraps driver.ErrNotInitialized; each of auto's failures carries its own
// in [NoBackendError].
func (r *Runtime) DriverVersion() (int, error) {
	b := r.Backend()
	var err error
	if b != nil {
		var v int
		if v, err = b.DriverVersion(); err == nil {
			return v, nil
		}
	}
	name := r.Registration().Name
	if b == nil && len(r.candidates) == 1 {
		name = r.candidates[0].Name
	}
	if v, ok := r.driverVersions.Load(name); ok {
		return v.(int), nil
	}
	if b == nil {
		return 0, r.notChosen()
	}
	return 0, err
}

// RuntimeVersion asks a driver.RuntimeVersioner backend for its runtime
// version, under DriverVersion's rules; other backends get an error wrapping
// ErrNotSupported.
func (r *Runtime) RuntimeVersion() (int, error) {
	b := r.Backend()
	if b == nil {
		return 0, r.notChosen()
	}
	rv, ok := driver.Capability[driver.RuntimeVersioner](b)
	if !ok {
		return 0, fmt.Errorf("%w: backend %s reports no runtime version", ErrNotSupported, r.Name())
	}
	return rv.RuntimeVersion()
}

func (r *Runtime) notChosen() error {
	names := make([]string, len(r.candidates))
	for i, reg := range r.candidates {
		names[i] = reg.Name
	}
	return fmt.Errorf("%w: auto has not chosen among %v yet", driver.ErrNotInitialized, names)
}

// DeviceCount initializes on first use and reports the number of devices.
// A nil ctx panics, naming DeviceCount.
func (r *Runtime) DeviceCount(ctx context.Context) (int, error) {
	nilContext(ctx, "DeviceCount")
	if err := r.init.Init(ctx); err != nil {
		return 0, err
	}
	return len(*r.devices.Load()), nil
}

// Device initializes on first use and describes one device. An ordinal out of
// range gets an error wrapping ErrInvalidDevice with the valid range.
// A nil ctx panics, naming Device.
func (r *Runtime) Device(ctx context.Context, ordinal int) (Info, error) {
	nilContext(ctx, "Device")
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
// A nil ctx panics, naming Devices.
func (r *Runtime) Devices(ctx context.Context) ([]Info, error) {
	nilContext(ctx, "Devices")
	if err := r.init.Init(ctx); err != nil {
		return nil, err
	}
	return slices.Clone(*r.devices.Load()), nil
}

// CheckOrdinal returns nil if ordinal names a device, else an error wrapping
// ErrInvalidDevice that gives the valid range. It does not initialize: the
// devices are known once the driver's init has succeeded, which includes
// work queued with LazyCall; before that the error wraps driver.ErrNotInitialized
// too. A negative ordinal is always invalid.
func (r *Runtime) CheckOrdinal(ordinal int) error {
	devices := r.devices.Load()
	switch {
	case ordinal < 0:
		return fmt.Errorf("%w: %d: ordinals start at 0", ErrInvalidDevice, ordinal)
	case devices == nil:
		return fmt.Errorf("%w: %d: %w: the %s runtime has not initialized, so its devices are not known yet",
			ErrInvalidDevice, ordinal, driver.ErrNotInitialized, r.Name())
	case ordinal >= len(*devices):
		n := len(*devices)
		return fmt.Errorf("%w: %d: %s has %d devices, valid ordinals are 0..%d", ErrInvalidDevice, ordinal, r.Name(), n, n-1)
	}
	return nil
}

// nilContext panics if ctx is nil, naming the method the caller called, as
// net/http does for a nil context: every method of a Runtime that takes a
// context follows this one rule.
func nilContext(ctx context.Context, method string) {
	if ctx == nil {
		panic("device: " + method + " called with a nil Context")
	}
}
