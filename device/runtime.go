package device

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/gpuinit/gpuinit/lazy"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/watch"
)

// Runtime is one backend's lazily initialized state. It is safe for
// concurrent use. [Open] returns one Runtime per name per registry. [New]
// makes a private one.
type Runtime struct {
	init *lazy.Initializer

	// Set at creation, read-only after.
	registry   *Registry             // where auto opens its candidates; nil for New
	candidates []driver.Registration // tried in order by the first Init; one unless auto
	auto       bool

	// Set as the Runtime runs. chosen is a fixed backend's from creation, and
	// auto's from the first Init. calls and watch are set by a successful
	// init. callDeadline is what SetCallDeadline set, and settings what
	// RequireDriverVersion and UsePreflight set: the initialization reads both.
	chosen         atomic.Pointer[choice]            // the backend in use (see above)
	passedOver     atomic.Pointer[[]BackendFailure]  // auto's candidates that failed, in order
	devices        atomic.Pointer[[]Info]            // stored once by init, before the queue drains
	settings       settings                          // RequireDriverVersion's and UsePreflight's
	bringUp        atomic.Pointer[BringUp]           // where init stands; nil before it starts
	visibility     atomic.Pointer[map[string]string] // the visibility settings init saw
	calls          atomic.Pointer[watch.CallWatch]   // watches calls into drivers; from init on
	callDeadline   atomic.Int64                      // in ns; 0 is DefaultCallDeadline
	watch          atomic.Pointer[watch.HealthWatch] // the health watch and losses; from init on
	view           atomic.Pointer[view]              // what the watch knows, for lock-free reads
	views          views
	canaries       sync.Map                    // ordinal -> when its canary in flight started
	driverVersions sync.Map                    // backend name -> the driver version it read before it failed
	closing        closing                     // Shutdown's one state: closed, and what it waits for
	failedCalls    failedCalls                 // queued calls that failed when they ran
	saidFailure    atomic.Pointer[failure]     // the memoized failure as Init says it
	logger         atomic.Pointer[slog.Logger] // WithLogger's; nil: slog.Default
}

// choice is a Runtime's backend and what it registered with.
type choice struct {
	reg     driver.Registration
	backend driver.Backend
}

// New returns a Runtime for b that no registry shares. It is for tests and
// for programs that bring their own Backend. Its registration is b's name
// alone: the default generator ordering, and no classifier but b's own
// [driver.ErrorClassifier]. Register b and Open it for more. New calls only
// b's Name; nothing else is called on b until first use. opts configure the
// Runtime, as [WithLogger] does.
func New(b driver.Backend, opts ...Option) *Runtime {
	return newRuntime(nil, []driver.Registration{{Name: b.Name()}}, false, b).applyOptions(opts)
}

// newRuntime makes a Runtime over candidates. A non-nil b is the opened
// backend of the only one.
func newRuntime(g *Registry, candidates []driver.Registration, auto bool, b driver.Backend) *Runtime {
	r := &Runtime{registry: g, candidates: candidates, auto: auto}
	r.closing.init()
	r.view.Store(&view{changed: make(chan struct{})})
	if b != nil {
		r.chosen.Store(&choice{reg: candidates[0], backend: b})
	}
	r.init = lazy.New(r.initialize, r.watchdogLogger(), lazy.WithQueuedFailures(r.queuedCallFailed))
	return r
}

// Backend returns the backend, for its optional interfaces and its own
// methods. A named backend is there from Open (or New) on. Auto's choice is
// there once its first Init has chosen; before that, Backend returns nil.
// Calling into it directly bypasses the lazy initialization.
func (r *Runtime) Backend() driver.Backend {
	if c := r.chosen.Load(); c != nil {
		return c.backend
	}
	return nil
}

// Registration returns what the backend registered with, once there is a
// Backend. Before that it returns the zero Registration. For a Runtime made
// by New it holds the name only.
func (r *Runtime) Registration() driver.Registration {
	if c := r.chosen.Load(); c != nil {
		return c.reg
	}
	return driver.Registration{}
}

// Name is the backend's name. For auto it is "auto" until the first Init
// chooses, then the choice.
func (r *Runtime) Name() string {
	switch c := r.chosen.Load(); {
	case c != nil:
		return c.reg.Name
	case !r.auto:
		return r.candidates[0].Name
	}
	return "auto"
}

// DriverVersion asks the backend for the driver's version. It initializes
// and loads nothing. See [driver.Backend] for what a backend can answer
// before Init. Where the initialization failed in a preflight child, only
// the child loaded the library. DriverVersion then answers with the version
// the child read. Before auto has chosen there is no one driver to ask: the
// error wraps [driver.ErrNotInitialized]. Each of auto's failures carries
// its own version in [NoBackendError].
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

// RuntimeVersion asks a [driver.RuntimeVersioner] backend for its runtime
// version. Before auto has chosen, it fails as DriverVersion does. Other
// backends get an error wrapping [ErrNotSupported].
func (r *Runtime) RuntimeVersion() (int, error) {
	b := r.Backend()
	if b == nil {
		return 0, r.notChosen()
	}
	rv, ok := driver.Capability[driver.RuntimeVersioner](b)
	if !ok {
		return 0, fmt.Errorf("device: backend %s reports no runtime version: %w", r.Name(), ErrNotSupported)
	}
	return rv.RuntimeVersion()
}

func (r *Runtime) notChosen() error {
	names := make([]string, len(r.candidates))
	for i, reg := range r.candidates {
		names[i] = reg.Name
	}
	return fmt.Errorf("device: auto has not chosen among %v yet: %w", names, driver.ErrNotInitialized)
}

// nilContext panics if ctx is nil, naming the method the caller called. So
// does net/http for a nil context. Every method of a Runtime that takes a
// context follows this one rule.
func nilContext(ctx context.Context, method string) {
	if ctx == nil {
		panic("device: " + method + " called with a nil Context")
	}
}

// An Option configures the Runtime that [Open] or [New] returns.
type Option func(*Runtime)

// WithLogger sets the logger of the Runtime's own warnings. The
// initialization's watchdog warns through it when the initialization, or
// one call queued before it, runs past [lazy.DefaultWatchdog]: a driver call
// that hangs, or a deadlock. A call queued with LazyCall that fails when it
// runs is logged through it too, with the site that queued it. The warning's message is one short line, and
// every goroutine's stack is its one [lazy.StacksKey] attribute, which a
// handler's ReplaceAttr may drop. Without WithLogger, or with a nil logger,
// the warnings go to [slog.Default] as it is at each warning.
//
// Open's Runtime is shared by every Open of its name: the logger one of
// them gives is the Runtime's from then on, for every warning not yet
// written, and an Open without WithLogger leaves it as it is. Warnings are
// written on the watchdog's goroutine, and nothing waits for them; see
// [lazy.WithLogger].
func WithLogger(l *slog.Logger) Option { return func(r *Runtime) { r.logger.Store(l) } }

// applyOptions applies opts to r, in order.
func (r *Runtime) applyOptions(opts []Option) *Runtime {
	for _, o := range opts {
		o(r)
	}
	return r
}

// watchdogLogger is the logger the Runtime gives its Initializer: it hands
// each record to the logger WithLogger set last, or to slog.Default's, read
// at each record, so that a later Open may still set it.
func (r *Runtime) watchdogLogger() lazy.Option {
	return lazy.WithLogger(slog.New(runtimeHandler{r}))
}

// runtimeHandler is watchdogLogger's slog.Handler.
type runtimeHandler struct{ r *Runtime }

func (h runtimeHandler) handler() slog.Handler {
	if l := h.r.logger.Load(); l != nil {
		return l.Handler()
	}
	return slog.Default().Handler()
}

func (h runtimeHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.handler().Enabled(ctx, level)
}

func (h runtimeHandler) Handle(ctx context.Context, rec slog.Record) error {
	return h.handler().Handle(ctx, rec)
}

// WithAttrs and WithGroup bind to the logger set now: the Initializer
// calls neither.
func (h runtimeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return h.handler().WithAttrs(attrs)
}

func (h runtimeHandler) WithGroup(name string) slog.Handler { return h.handler().WithGroup(name) }
