// Package lazy runs a one-time initialization on first use and replays the work
// queued before it, without ever running user code under its own lock.
//
// An Initializer starts Uninitialized. Call queues functions until then; Init runs
// the init function once, then the queued functions in the order Call queued them,
// and only then reports Ready. From then on Call runs its function at once, on the
// caller's goroutine, with no lock and no allocation. If init or a queued function
// fails, panics or calls runtime.Goexit, the Initializer is Failed for good: every
// later Init and Call returns the memoized error, which names the call site that
// queued the failing work and lists the queued work that never ran.
//
// Re-entry never deadlocks. The init function and queued functions may call Init
// and Call on the same Initializer, from their own goroutine or from goroutines
// they start with the context they were given: such a Call runs at once, such an
// Init returns nil (or ErrReentrantInit from inside init itself). Go has no
// goroutine-local storage, so the context carries a marker; a call with a foreign
// context (context.Background()) is still recognized when it comes from the
// goroutine that runs the initialization.
package lazy

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Func is work to run once the GPU, or whatever is initialized, is up.
// The context is the caller's when it runs at once and the initialization's when
// it was queued; either way it marks calls made through it as re-entrant.
type Func func(ctx context.Context) error

// State is where an Initializer is in its life. It only moves forward:
// Uninitialized, Initializing, then Ready or Failed, both final.
type State int32

// The states of an Initializer.
const (
	Uninitialized State = iota // nothing has run
	Initializing               // init or the queued functions are running
	Ready                      // init and every queued function succeeded
	Failed                     // init or a queued function failed; final
)

// String returns the state's name in lower case, for logs.
func (s State) String() string {
	switch s {
	case Uninitialized:
		return "uninitialized"
	case Initializing:
		return "initializing"
	case Ready:
		return "ready"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

const (
	phaseInit  int32 = iota // the init function runs
	phaseDrain              // queued functions run
)

// DefaultWatchdog is how long init or one queued function may run before the
// Initializer logs a warning with every goroutine's stack.
const DefaultWatchdog = 30 * time.Second

// An Initializer runs an init function once, on first Init, and the functions
// queued by Call before that, in order. Its zero value is ready to use: it has no
// init function (Init only replays the queue), the default watchdog and
// slog.Default as logger. An Initializer must not be copied after first use.
//
// All methods are safe for concurrent use and for re-entrant use from inside
// init and queued functions.
type Initializer struct {
	state    atomic.Int32  // a State; written under mu, read without it
	phase    atomic.Int32  // phaseInit or phaseDrain while Initializing
	workerID atomic.Uint64 // goroutine id of the goroutine that runs init and the queue
	holder   atomic.Uint64 // goroutine id holding mu; tracked only in tests

	init    Func
	options options

	mu      sync.Mutex
	queue   []*entry // functions waiting for init; queue[head:] have not started
	head    int
	done    chan struct{} // made by the first Init; closed when Ready or Failed
	err     error         // the memoized failure; set before state becomes Failed
	refusal error         // err wrapped for Call, made once so that refusing costs nothing; set with err
}

// New returns an Initializer that will run init on the first call of Init.
// Nothing runs in New. A nil init is allowed and does nothing.
func New(init Func, opts ...Option) *Initializer {
	i := &Initializer{init: init}
	for _, o := range opts {
		o(&i.options)
	}
	return i
}

// State reports the Initializer's state. It takes no lock.
func (i *Initializer) State() State { return State(i.state.Load()) }

// Init initializes on first use and returns the memoized result.
//
// The first Init starts the init function, then runs every queued function in
// order, and all callers return once that is done: nil if everything succeeded,
// else the same error for everyone (an *InitError or a *DeferredError). Init never
// runs init twice, and never retries: after a failure every call returns the
// memoized error.
//
// The work runs on a goroutine that the Initializer owns, with a context that
// keeps the first caller's values but not its cancellation. A caller whose ctx
// ends before the work is done gets an error wrapping ctx.Err() at once; the
// initialization goes on, and later callers see its result. If ctx is already
// done when Init would start the initialization, nothing starts.
//
// Called from inside init (through its context or on its goroutine) Init returns
// ErrReentrantInit; called from a queued function it returns nil, since init has
// succeeded by then. Either way it does not wait, so it cannot deadlock.
func (i *Initializer) Init(ctx context.Context) error {
	switch State(i.state.Load()) {
	case Ready:
		return nil
	case Failed:
		return i.err
	case Initializing:
		if i.reentrant(ctx) {
			if i.phase.Load() == phaseInit {
				return ErrReentrantInit
			}
			return nil
		}
	}
	i.lock()
	if State(i.state.Load()) == Uninitialized {
		if err := ctx.Err(); err != nil {
			i.unlock()
			return fmt.Errorf("lazy: initialization not started: %w", err)
		}
		i.done = make(chan struct{})
		i.phase.Store(phaseInit)
		i.state.Store(int32(Initializing))
		go i.run(ctx)
	}
	done := i.done
	i.unlock()
	select {
	case <-done:
	default:
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("lazy: stopped waiting for initialization, which goes on: %w", ctx.Err())
		}
	}
	if State(i.state.Load()) == Failed {
		return i.err
	}
	return nil
}

// Call runs fn at once if the Initializer is Ready, and returns fn's error; that
// path takes no lock and allocates nothing, and a panic in fn propagates to the
// caller. Before that, Call queues fn with its call site and returns nil; fn
// then runs exactly once, after init succeeds, in the order of the Calls, before
// Init reports success, and its failure is reported by Init as a *DeferredError.
// Call never starts the initialization.
//
// Called from inside init or a queued function (through their context, or on the
// goroutine that runs them), Call runs fn at once, as it would have run had the
// initialization been eager. After a failure Call runs nothing and returns an
// error wrapping the memoized one.
func (i *Initializer) Call(ctx context.Context, fn Func) error {
	// Call must be inlined for the ready path to cost no more than a load and
	// fn's own call, and an inlined function may make only one call. So both
	// paths share the call below; off the ready path it goes to slowCall, with
	// fn carried in a small wrapper context.
	if State(i.state.Load()) != Ready {
		ctx, fn = &pendingCall{ctx, i, fn, 0}, slowCall
	}
	return fn(ctx)
}

// CallDepth is Call for wrappers: the call site recorded for a queued fn is depth
// frames above the caller of CallDepth, as in log.Output. CallDepth(ctx, 0, fn)
// is Call(ctx, fn).
func (i *Initializer) CallDepth(ctx context.Context, depth int, fn Func) error {
	if State(i.state.Load()) != Ready {
		ctx, fn = &pendingCall{ctx, i, fn, depth}, slowCall
	}
	return fn(ctx)
}

// pendingCall carries Call's arguments to slowCall. It is never passed on to
// user code: slowCall unwraps it first.
type pendingCall struct {
	context.Context
	i     *Initializer
	fn    Func
	depth int
}

func slowCall(ctx context.Context) error {
	p := ctx.(*pendingCall)
	// Skip runtime.Callers, callSlow, slowCall and Call.
	return p.i.callSlow(p.Context, p.depth+4, p.fn)
}

func (i *Initializer) callSlow(ctx context.Context, depth int, fn Func) error {
	if fn == nil {
		panic("lazy: Call with nil Func")
	}
	switch State(i.state.Load()) {
	case Failed:
		return i.refusal
	case Initializing:
		if i.reentrant(ctx) {
			return fn(ctx)
		}
	}
	e := &entry{fn: fn}
	runtime.Callers(depth, e.pc[:])
	if testHookBeforeLock != nil {
		testHookBeforeLock()
	}
	i.lock()
	switch State(i.state.Load()) {
	case Ready:
		// Initialization finished between the unlocked check and this one:
		// run now, outside the lock (PyTorch's run_now).
		i.unlock()
		return fn(ctx)
	case Failed:
		i.unlock()
		return i.refusal
	}
	i.queue = append(i.queue, e)
	i.unlock()
	return nil
}

// refusal wraps the memoized failure for Call.
type refusal struct{ err error }

func (r *refusal) Error() string { return "lazy: call not run: " + r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// reentrant reports whether a call comes from the initialization itself: through
// a context that carries this Initializer's marker, or from the goroutine that
// runs init and the queue. Only meaningful while Initializing; it costs about a
// microsecond when the context carries no marker.
func (i *Initializer) reentrant(ctx context.Context) bool {
	if ctx != nil && ctx.Value(markerKey{i}) != nil {
		return true
	}
	return i.workerID.Load() == currentGoroutineID()
}

// markerKey marks a context as belonging to one Initializer's initialization.
type markerKey struct{ i *Initializer }

// run is the initialization goroutine: init, then the queue in order, then the
// final state. Nothing of the user's runs while mu is held.
func (i *Initializer) run(parent context.Context) {
	i.workerID.Store(currentGoroutineID())
	ctx := context.WithValue(context.WithoutCancel(parent), markerKey{i}, true)
	wd := newWatchdog(&i.options)
	var cur *entry
	var err error
	// step runs e. If e calls runtime.Goexit, step never returns and err stays
	// ErrGoexit for the deferred code, which settles every failure.
	step := func(e *entry) bool {
		cur, err = e, ErrGoexit
		err = wd.run(ctx, e)
		return err == nil
	}
	defer func() {
		if err != nil {
			wd.stop()
			i.fail(cur, err)
		}
	}()

	if i.init != nil && !step(&entry{fn: i.init, isInit: true}) {
		return
	}
	i.phase.Store(phaseDrain)
	for {
		i.lock()
		if i.head == len(i.queue) {
			i.unlock()
			// Stop the watchdog before anyone can see Ready, so that no
			// goroutine of ours outlives a successful Init.
			wd.stop()
			i.lock()
			if i.head == len(i.queue) {
				i.queue, i.head = nil, 0
				i.state.Store(int32(Ready))
				close(i.done)
				i.unlock()
				return
			}
			wd.restart()
		}
		next := i.queue[i.head]
		i.queue[i.head] = nil
		i.head++
		i.unlock()
		if !step(next) {
			return
		}
	}
}

// fail makes cur's failure final: it takes every function still queued out of
// the queue, lists them in the memoized error and releases every waiter, all
// under one lock, so that a Call can neither slip in unlisted nor run later.
func (i *Initializer) fail(cur *entry, err error) {
	i.lock()
	notRun := make([]string, 0, len(i.queue)-i.head)
	for _, e := range i.queue[i.head:] {
		notRun = append(notRun, e.site())
	}
	if cur.isInit {
		i.err = &InitError{Err: err, NotRun: notRun}
	} else {
		i.err = &DeferredError{Site: cur.site(), Err: err, NotRun: notRun}
	}
	i.refusal = &refusal{i.err}
	i.queue, i.head = nil, 0
	i.state.Store(int32(Failed))
	close(i.done)
	i.unlock()
}
