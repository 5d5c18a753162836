package rng_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/gpuinit/gpuinit/rng"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lineAfter returns "file.go:N" for the line after its caller's.
func lineAfter() string {
	_, file, line, _ := runtime.Caller(1)
	return fmt.Sprintf("%s:%d ", filepath.Base(file), line+1)
}

// Every exported queuing method records the user's line as the call site of
// the work it queues, not a line of package rng.
func TestQueuedWorkNamesTheCallersLine(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		queue func(g *rng.Generators) (site string, err error)
	}{
		{"ManualSeed", func(g *rng.Generators) (string, error) {
			site := lineAfter()
			return site, g.ManualSeed(ctx, 0, 1)
		}},
		{"ManualSeedAll", func(g *rng.Generators) (string, error) {
			site := lineAfter()
			return site, g.ManualSeedAll(ctx, 1)
		}},
		{"Seed", func(g *rng.Generators) (string, error) {
			site := lineAfter()
			_, err := g.Seed(ctx, 0)
			return site, err
		}},
		{"SeedAll", func(g *rng.Generators) (string, error) {
			site := lineAfter()
			_, err := g.SeedAll(ctx)
			return site, err
		}},
		{"SetState", func(g *rng.Generators) (string, error) {
			site := lineAfter()
			return site, g.SetState(ctx, 0, rng.State{Seed: 1})
		}},
		{"SetStateAll", func(g *rng.Generators) (string, error) {
			site := lineAfter()
			return site, g.SetStateAll(ctx, []rng.State{{Seed: 1}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := device.New(sim.New(sim.WithFailure(sim.NoDevice)))
			site, err := tc.queue(rng.New(rt))
			require.NoError(t, err)
			var ie *lazy.InitError
			require.ErrorAs(t, rt.Init(ctx), &ie)
			require.Len(t, ie.NotRun, 1)
			assert.Contains(t, ie.NotRun[0], site+"github.com/gpuinit/gpuinit/rng_test.TestQueuedWorkNamesTheCallersLine")
		})
	}
}

func TestCloseReleasesGeneratorsAndRefusesLaterUse(t *testing.T) {
	ctx := context.Background()
	counting := &closeCounting{Backend: sim.New(sim.WithDevices(2))}
	g := rng.New(device.New(counting))
	require.NoError(t, g.Generate(ctx, 0, make([]uint32, 4)))
	require.NoError(t, g.Generate(ctx, 1, make([]uint32, 4)))
	require.NoError(t, g.Generate(ctx, 1, make([]uint32, 4)))

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for k := range errs {
		wg.Go(func() { errs[k] = g.Close() })
	}
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}
	assert.Equal(t, 2, counting.created)
	assert.Equal(t, 2, counting.closed, "each device generator closed once, however often Close is called")

	for name, use := range map[string]func() error{
		"Generate":   func() error { return g.Generate(ctx, 0, make([]uint32, 4)) },
		"ManualSeed": func() error { return g.ManualSeed(ctx, 0, 1) },
		"SeedAll":    func() error { _, err := g.SeedAll(ctx); return err },
		"State":      func() error { _, err := g.State(ctx, 0); return err },
		"StateAll":   func() error { _, err := g.StateAll(ctx); return err },
	} {
		assert.ErrorIs(t, use(), rng.ErrClosed, name)
	}
}

func TestCloseBeforeInitLeavesTheRuntimeUsable(t *testing.T) {
	ctx := context.Background()
	rt := device.New(sim.New())
	g := rng.New(rt)
	require.NoError(t, g.ManualSeed(ctx, 0, 5)) // queued
	require.NoError(t, g.Close())
	require.NoError(t, rt.Init(ctx), "queued work of closed Generators does not fail the runtime")
}

func TestGenerateNeverLeavesAStateTorchRefuses(t *testing.T) {
	ctx := context.Background()
	g, _ := newGenerators(1)
	const last = 1<<63 - 4 // the largest offset torch's int64 holds, as a multiple of 4
	for _, tc := range []struct {
		offset  uint64
		n       int
		refused bool
	}{
		{last - 8, 8, false},
		{last - 8, 9, true}, // rounds up to 12
		{last, 0, false},
		{last, 1, true},
		{last - 4, 8, true},
	} {
		for name, draw := range map[string]func(context.Context, int, []uint32) error{"Generate": g.Generate, "GenerateOnHost": g.GenerateOnHost} {
			t.Run(fmt.Sprintf("%s/offset=%d/n=%d", name, tc.offset, tc.n), func(t *testing.T) {
				require.NoError(t, g.SetState(ctx, 0, rng.State{Seed: 3, Offset: tc.offset}))
				err := draw(ctx, 0, make([]uint32, tc.n))
				s, serr := g.State(ctx, 0)
				require.NoError(t, serr)
				if tc.refused {
					assert.ErrorIs(t, err, rng.ErrBadState)
					assert.Equal(t, tc.offset, s.Offset, "a refused draw leaves the state alone")
				} else {
					require.NoError(t, err)
				}
				b, err := s.MarshalBinary()
				require.NoError(t, err, "every state Generate leaves round-trips")
				var back rng.State
				require.NoError(t, back.UnmarshalBinary(b))
				require.NoError(t, g.SetState(ctx, 0, back))
			})
		}
	}
}

// closeCounting counts the generators a sim backend creates and closes.
type closeCounting struct {
	*sim.Backend
	mu              sync.Mutex
	created, closed int
}

func (c *closeCounting) NewGenerator(ordinal int) (driver.Generator, error) {
	gen, err := c.Backend.NewGenerator(ordinal)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.created++
	c.mu.Unlock()
	return &closeCounted{Generator: gen, c: c}, nil
}

type closeCounted struct {
	driver.Generator
	c    *closeCounting
	once sync.Once
}

func (g *closeCounted) Close() error {
	closedBefore := true
	g.once.Do(func() { closedBefore = false })
	if closedBefore {
		return errors.New("generator closed twice")
	}
	g.c.mu.Lock()
	g.c.closed++
	g.c.mu.Unlock()
	return g.Generator.Close()
}
