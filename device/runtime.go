// Package device is gpuinit's backend-neutral GPU runtime.
//
// [Open] returns the [Runtime] of a backend (cuda, hip, sim, or auto: the
// first GPU backend that works). It touches no driver. The first call that
// needs the devices initializes it, once: [Runtime.Init], [Runtime.Devices],
// [Runtime.Do], and the like. Work queued with [Runtime.LazyCall] before then
// runs right after the driver's init, in order, and may re-enter the Runtime
// without deadlocking. A queued call's failure is its own; the
// initialization's is memoized and carries the driver's code, its name and a
// hint. [ClassOf] says whether to wait, fall back or call an operator, and
// [FallBackToCPU] whether the host has no GPU at all. [Runtime.UsePreflight]
// runs the driver's init in a child process first, so that a driver that
// hangs or crashes takes the child down, not the server.
//
// After init the Runtime watches its devices. Every driver call it makes runs
// under a deadline ([Runtime.SetCallDeadline]). The backend's health watch
// (NVML's events, amdgpu's RAS counters) loses a device that needs a reset.
// [Runtime.Canary] proves a device still works. [Runtime.Stats] says all of
// it at one moment, as [database/sql.DB.Stats] does. [Runtime.Shutdown]
// stops everything the Runtime runs, as [net/http.Server.Shutdown] does.
//
// Backends register with [Register] when their package is imported (import
// package backends for every backend the build can have). What they
// implement is package driver's interface. A [Registry] other than
// [DefaultRegistry] gives a test or a program backends and Runtimes of its
// own.
//
// Each registry gives a name one Runtime. Two Runtimes over one backend (auto's,
// and one opened by name before auto chose it) share the backend's driver,
// which cuda and hip initialize once per process. Each keeps its own queue,
// devices and error reports.
//
// Every method is safe for concurrent use. Every method that takes a context
// panics on a nil one, naming itself, as net/http does; none waits past its
// context's end.
package device

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

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
	canaries       sync.Map  // ordinal -> when its canary in flight started
	driverVersions sync.Map  // backend name -> the driver version it read before it failed
	stop           *stopping // Shutdown: nothing more starts, and preflights end
	inFlight       inFlight  // the calls into the devices' drivers under way
	shutdown       shutdown
	failedCalls    failedCalls                 // queued calls that failed when they ran
	saidFailure    atomic.Pointer[initFailure] // the memoized failure as Init says it
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
	r.inFlight.drained = make(chan struct{}, 1)
	r.view.Store(&view{changed: make(chan struct{})})
	if b != nil {
		r.chosen.Store(&choice{reg: candidates[0], backend: b})
	}
	r.init = lazy.New(r.initialize, append(slices.Clip(opts), lazy.WithQueuedFailures(r.failedCalls.add))...)
	return r
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

// nilContext panics if ctx is nil, naming the method the caller called, as
// net/http does for a nil context: every method of a Runtime that takes a
// context follows this one rule.
func nilContext(ctx context.Context, method string) {
	if ctx == nil {
		panic("device: " + method + " called with a nil Context")
	}
}
