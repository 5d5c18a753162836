package rng

import (
	"context"
	"fmt"
)

// queuedCall is one mutating call made through the runtime's LazyCall: run
// at once, or queued before initialization. Generators.mu guards its fields.
// A queued call's failure is its own (see the package documentation): the
// next call of the same method returns it. Whether a failure came from a
// queued run is decided by who saw it first: a call that ran at once has
// its error returned by LazyCall, one that was queued does not.
type queuedCall struct {
	method   string
	returned bool  // LazyCall returned to the caller
	done     bool  // the function ran
	err      error // what it returned
}

// lazyCall runs fn through the runtime's LazyCall as method, depth frames
// above its caller's caller. It first returns, and clears, the failure of an
// earlier call of method that was queued: that call's caller never learned
// of it, and this call is not made.
func (g *Generators) lazyCall(ctx context.Context, depth int, method string, fn func(context.Context) error) error {
	if err := g.takeQueuedFailure(method); err != nil {
		return err
	}
	call := &queuedCall{method: method}
	err := g.rt.LazyCallDepth(ctx, depth+1, func(ctx context.Context) error {
		err := fn(ctx)
		g.mu.Lock()
		defer g.mu.Unlock()
		call.done, call.err = true, err
		if call.returned && err != nil {
			g.keepQueuedFailure(call) // queued: no caller is waiting for it
		}
		return err
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	call.returned = true
	if err == nil && call.done && call.err != nil {
		g.keepQueuedFailure(call) // queued, and failed before LazyCall returned
	}
	return err
}

// keepQueuedFailure keeps a queued call's failure for the next call of its
// method, the first one if several failed; g.mu is held.
func (g *Generators) keepQueuedFailure(call *queuedCall) {
	if g.queuedFailures == nil {
		g.queuedFailures = map[string]error{}
	}
	if _, ok := g.queuedFailures[call.method]; !ok {
		g.queuedFailures[call.method] = fmt.Errorf("rng: a %s queued before initialization failed when it ran, so this call was not made: %w",
			call.method, call.err)
	}
}

// takeQueuedFailure returns and clears method's kept failure, or nil.
func (g *Generators) takeQueuedFailure(method string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	err := g.queuedFailures[method]
	delete(g.queuedFailures, method)
	return err
}
