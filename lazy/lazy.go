package lazy

import (
	"context"
	"fmt"
	"runtime/debug"
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
	// Read without mu on the fast paths; state is written only under mu.
	state    atomic.Int32          // a State
	phase    atomic.Int32          // phaseInit or phaseDrain while Initializing
	workerID atomic.Uint64         // goroutine id of the goroutine that runs init and the queue
	holder   atomic.Uint64         // goroutine id holding mu; tracked only in tests
	running  atomic.Pointer[entry] // the function the initialization runs now, for Running
	started  atomic.Int64          // UnixNano when the initialization started; 0 before
	finished atomic.Int64          // UnixNano when it became Ready or Failed; 0 before

	// Set by New, read-only after.
	init    Func
	options options

	mu    sync.Mutex // protects following fields
	queue []*entry   // functions waiting for init; queue[head:] have not started
	head  int
	done  chan struct{} // made by the first Init; closed when Ready or Failed

	// Written under mu before state becomes Failed, read-only after; readers
	// that saw Failed read them without mu.
	err     error // the memoized failure
	refusal error // err wrapped for Call, made once so that refusing allocates nothing
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

// Times reports when the initialization started and when it finished (became
// Ready or Failed); a time not reached yet is zero. It takes no lock.
func (i *Initializer) Times() (started, finished time.Time) {
	if ns := i.started.Load(); ns != 0 {
		started = time.Unix(0, ns)
	}
	if ns := i.finished.Load(); ns != 0 {
		finished = time.Unix(0, ns)
	}
	return started, finished
}

// Running reports what the initialization is running now, while Initializing:
// "init" for the init function, or the call site ("file.go:line function") of
// the queued function, and when it started; ok is false between functions and
// in every other state. It takes no lock and never waits, so a health check may
// call it while init hangs.
func (i *Initializer) Running() (what string, since time.Time, ok bool) {
	e := i.running.Load()
	if e == nil {
		return "", time.Time{}, false
	}
	return e.site(), e.start, true
}

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
//
// ctx's methods are called before the mutex is taken, never under it, so a
// Context whose Err or Value re-enters the Initializer is safe. Init panics on a
// nil ctx, before it takes anything.
func (i *Initializer) Init(ctx context.Context) error {
	if ctx == nil {
		panic("lazy: Init called with a nil Context; use context.Background() or context.TODO()")
	}
	state := State(i.state.Load())
	switch state {
	case Ready:
		return nil
	case Failed:
		return i.err
	case Initializing:
		if i.reentrant(ctx, "Init") {
			if i.phase.Load() == phaseInit {
				return ErrReentrantInit
			}
			return nil
		}
	}
	// Only an Initializer seen Uninitialized can start under the lock below,
	// which is when ctx's error decides; states only move forward.
	var ctxErr error
	if state == Uninitialized {
		ctxErr = contextErr(ctx, "Init")
	}
	i.lock()
	if State(i.state.Load()) == Uninitialized {
		if ctxErr != nil {
			i.unlock()
			return fmt.Errorf("lazy: initialization not started: %w", ctxErr)
		}
		i.begin(ctx)
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

// Start starts the initialization, as the first Init does, and returns
// without waiting for it: for a health check that must answer at once, and
// must say truthfully that the initialization has begun. It returns nil if
// the initialization is under way or finished, whoever started it, and
// starts nothing if ctx is already done, returning an error wrapping
// ctx.Err(). ctx's values reach init, as Init's do; its cancellation does
// not. Like Init, it panics on a nil ctx.
func (i *Initializer) Start(ctx context.Context) error {
	if ctx == nil {
		panic("lazy: Start called with a nil Context; use context.Background() or context.TODO()")
	}
	if State(i.state.Load()) != Uninitialized {
		return nil
	}
	ctxErr := contextErr(ctx, "Start")
	i.lock()
	if State(i.state.Load()) == Uninitialized {
		if ctxErr != nil {
			i.unlock()
			return fmt.Errorf("lazy: initialization not started: %w", ctxErr)
		}
		i.begin(ctx)
	}
	i.unlock()
	return nil
}

// begin moves an Uninitialized Initializer to Initializing and starts the
// initialization goroutine. i.mu is held.
func (i *Initializer) begin(ctx context.Context) {
	i.done = make(chan struct{})
	i.started.Store(time.Now().UnixNano())
	i.phase.Store(phaseInit)
	i.state.Store(int32(Initializing))
	go i.run(ctx)
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
//
// Call panics on a nil fn, whatever the state, with the same message.
func (i *Initializer) Call(ctx context.Context, fn Func) error {
	// Call must be inlined for the ready path to cost no more than a load, a
	// nil check and fn's own call, and an inlined function may make only one
	// call. So every path shares the call below; off the ready path (and for a
	// nil fn, so that it panics as clearly as before init) it goes to
	// callPending, with the arguments carried in a small wrapper context.
	if State(i.state.Load()) != Ready || fn == nil {
		ctx, fn = &pendingCall{ctx, i, fn, 0}, callPending
	}
	return fn(ctx)
}

// CallDepth is Call for wrappers: the call site recorded for a queued fn is depth
// frames above the caller of CallDepth, as in log.Output. CallDepth(ctx, 0, fn)
// is Call(ctx, fn).
func (i *Initializer) CallDepth(ctx context.Context, depth int, fn Func) error {
	if State(i.state.Load()) != Ready || fn == nil {
		ctx, fn = &pendingCall{ctx, i, fn, depth}, callPending
	}
	return fn(ctx)
}

// run is the initialization goroutine: init, then the queue in order, then the
// final state. Nothing of the user's runs while mu is held.
func (i *Initializer) run(parent context.Context) {
	i.workerID.Store(currentGoroutineID())
	ctx := context.WithValue(context.WithoutCancel(parent), markerKey{i}, true)
	wd := newWatchdog(&i.options, &i.running)
	var cur *entry
	var err error
	// step runs e. If e calls runtime.Goexit, step never returns and err stays
	// ErrGoexit for the deferred code, which settles every failure.
	step := func(e *entry) bool {
		cur, err = e, ErrGoexit
		e.start = time.Now()
		i.running.Store(e)
		err = wd.run(ctx, e)
		i.running.Store(nil)
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
			// Stop the watchdog before anyone can see Ready, so that it starts
			// no new warning. stop takes only the watchdog's own mutex and
			// waits for no warning being written, so it may run under mu.
			wd.stop()
			i.queue, i.head = nil, 0
			i.finished.Store(time.Now().UnixNano())
			i.state.Store(int32(Ready))
			close(i.done)
			i.unlock()
			return
		}
		next := i.queue[i.head]
		i.queue[i.head] = nil
		i.head++
		i.unlock()
		if !step(next) {
			if i.options.onFailure == nil || err == ErrGoexit {
				return
			}
			// The failure is the queued call's own: report it, and go on.
			if err = i.reportFailure(&DeferredError{Site: next.site(), Err: err}); err != nil {
				return // report panicked: that fails the initialization, with cur's site
			}
		}
	}
}

// reportFailure passes a queued call's failure to WithQueuedFailures'
// report, and returns a *PanicError if report panics.
func (i *Initializer) reportFailure(failed *DeferredError) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	i.options.onFailure(failed)
	return nil
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
	i.refusal = &notRunError{i.err}
	i.queue, i.head = nil, 0
	i.running.Store(nil) // a function that called Goexit never cleared it
	i.finished.Store(time.Now().UnixNano())
	i.state.Store(int32(Failed))
	close(i.done)
	i.unlock()
}
