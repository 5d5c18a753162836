package rng

import (
	"context"

	"github.com/gpuinit/gpuinit/device"
)

// fallBack reports whether err is the initialization's finding that this
// host has no GPU to use ([device.FallBackToCPU]). The first time, it moves
// the Generators onto the CPU: the calls queued before the initialization
// are made on the states drawn on the CPU, in the order they were made, so
// that GenerateOnHost draws what the devices would have drawn. From then
// on, every mutating call is made there at once.
//
// On the CPU there is no device count. An ordinal of 0 or more names a
// state of its own, starting from what the last …All call set (DefaultSeed
// before any). SetStateAll sets the states of ordinals 0 to len-1.
func (g *Generators) fallBack(ctx context.Context, err error) bool {
	if !device.FallBackToCPU(err) {
		return false
	}
	if g.replayed.Load() {
		return true
	}
	g.moving.Lock()
	defer g.moving.Unlock()
	if g.replayed.Load() {
		return true
	}
	g.onCPU.Store(true)
	// The replay's calls are the queued callers', whose contexts are gone:
	// this caller's must not cut them short.
	ctx = context.WithoutCancel(ctx)
	for call := g.nextPending(); call != nil; call = g.nextPending() {
		_ = call.onCPU(ctx) // what can fail was refused when it was made
	}
	g.replayed.Store(true)
	return true
}

// setAllOnCPU is an …All call made on the CPU: f sets the state of every
// ordinal there is and of those to come.
func (g *Generators) setAllOnCPU(ctx context.Context, f func(*State)) error {
	g.mu.Lock()
	f(&g.cpuBase)
	ordinals := make([]int, 0, len(g.devices))
	for ordinal := range g.devices {
		ordinals = append(ordinals, ordinal)
	}
	g.mu.Unlock()
	for _, ordinal := range ordinals {
		if _, err := g.apply(ctx, ordinal, f); err != nil {
			return err
		}
	}
	return nil
}
