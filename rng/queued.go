package rng

import (
	"context"
	"slices"
)

// pendingCall is one mutating call made through the runtime's LazyCall that
// has not run yet: queued before initialization, or about to run at once.
// Generators.mu guards claimed.
//
// Its failure, when it runs, is its own (see the package documentation):
// the runtime records it with the call site, and no other call returns it.
// Should the initialization find no GPU, onCPU makes the call on the states
// drawn on the CPU instead (see cpu.go).
type pendingCall struct {
	onCPU   func(context.Context) error
	claimed bool // it ran, on the device's state or on the CPU's: it runs once
}

// lazyCall runs fn through the runtime's LazyCall, or, once the Generators
// draw on the CPU, makes onCPU instead. depth counts the frames above
// lazyCall's caller to the user's line, which a queued call records.
//
// A call LazyCall refuses because the initialization found no GPU is made
// on the CPU (with every call queued before it, in order), and returns nil.
// Any other refusal (Shutdown, a failed initialization) returns its error,
// and the call is not made.
func (g *Generators) lazyCall(ctx context.Context, depth int, onCPU, fn func(context.Context) error) error {
	if g.replayed.Load() {
		return onCPU(ctx)
	}
	call := &pendingCall{onCPU: onCPU}
	g.mu.Lock()
	g.pending = append(g.pending, call)
	g.mu.Unlock()
	err := g.rt.LazyCallDepth(ctx, depth+1, func(ctx context.Context) error {
		if !g.claim(call) {
			return nil
		}
		return fn(ctx)
	})
	if err == nil {
		return nil
	}
	if g.fallBack(ctx, err) {
		if g.claim(call) { // not made by the replay: it came after
			return onCPU(ctx)
		}
		return nil
	}
	g.claim(call) // never made: forget it
	return err
}

// claim takes call off the pending list so that it is made once, and
// reports whether it was still there.
func (g *Generators) claim(call *pendingCall) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if call.claimed {
		return false
	}
	call.claimed = true
	if i := slices.Index(g.pending, call); i >= 0 {
		g.pending = slices.Delete(g.pending, i, i+1)
	}
	return true
}

// nextPending claims the first pending call, or returns nil.
func (g *Generators) nextPending() *pendingCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) == 0 {
		return nil
	}
	call := g.pending[0]
	call.claimed = true
	g.pending = g.pending[1:]
	return call
}
