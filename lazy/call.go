package lazy

import (
	"context"
	"fmt"
	"strings"
)

// pendingCall carries Call's arguments to callPending. It is never passed on to
// user code: callPending unwraps it first.
type pendingCall struct {
	context.Context
	i     *Initializer
	fn    Func
	depth int
}

// callPending is Call off the ready path, reached through Call's single call.
func callPending(ctx context.Context) error {
	p := ctx.(*pendingCall)
	// Skip runtime.Callers, recordCallSite, queueOrRun, callPending and Call.
	return p.i.queueOrRun(p.Context, p.depth+5, p.fn)
}

// queueOrRun runs fn now if the Initializer is Ready or the call is re-entrant,
// refuses it after a failure, and queues it otherwise. The call site is
// recorded depth frames up, before the lock: nothing of the caller's runs under
// it.
func (i *Initializer) queueOrRun(ctx context.Context, depth int, fn Func) error {
	if fn == nil {
		panic("lazy: Call with nil Func")
	}
	switch State(i.state.Load()) {
	case Ready:
		return fn(ctx)
	case Failed:
		return i.refusal
	case Initializing:
		if i.reentrant(ctx, "Call") {
			return fn(ctx)
		}
	}
	e := &entry{fn: fn}
	e.recordCallSite(depth)
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

// notRunError is what Call returns after a failure: the memoized error,
// wrapped once so that every refusal returns the same value. Its message
// says lazy's prefix once: the memoized error's own is dropped.
type notRunError struct{ err error }

func (e *notRunError) Error() string {
	return "lazy: call not run: " + strings.TrimPrefix(e.err.Error(), "lazy: ")
}
func (e *notRunError) Unwrap() error { return e.err }

// reentrant reports whether a call comes from the initialization itself: through
// a context that carries this Initializer's marker, or from the goroutine that
// runs init and the queue. Only meaningful while Initializing; it costs about a
// microsecond when the context carries no marker. It calls ctx.Value, so it
// must never run under the mutex; op names the caller's method for the panic
// of a Context that cannot answer.
func (i *Initializer) reentrant(ctx context.Context, op string) bool {
	if ctx != nil && contextValue(ctx, markerKey{i}, op) != nil {
		return true
	}
	return i.workerID.Load() == currentGoroutineID()
}

// markerKey marks a context as belonging to one Initializer's initialization.
type markerKey struct{ i *Initializer }

// contextErr and contextValue are ctx.Err() and ctx.Value(key), with a clear
// panic for a Context that cannot answer: a struct that embeds a nil Context
// panics with a bare nil dereference. They run before the mutex is taken, so
// such a panic leaves nothing held.
func contextErr(ctx context.Context, op string) error {
	defer repanicContext(op, "Err")
	return ctx.Err()
}

func contextValue(ctx context.Context, key any, op string) any {
	defer repanicContext(op, "Value")
	return ctx.Value(key)
}

func repanicContext(op, method string) {
	if v := recover(); v != nil {
		panic(fmt.Sprintf("lazy: %s: the Context's %s method panicked (a struct embedding a nil Context?): %v", op, method, v))
	}
}
