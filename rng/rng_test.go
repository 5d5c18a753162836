package rng_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/gpuinit/gpuinit/rng"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newGenerators(devices int) (*rng.Generators, *device.Runtime) {
	rt := device.New(sim.New(sim.WithDevices(devices)))
	return rng.New(rt), rt
}

func TestStateBytesAreTorchs(t *testing.T) {
	s := rng.State{Seed: 0x0102030405060708, Offset: 12}
	b, err := s.MarshalBinary()
	require.NoError(t, err)
	assert.Equal(t, []byte{8, 7, 6, 5, 4, 3, 2, 1, 12, 0, 0, 0, 0, 0, 0, 0}, b)

	for _, tc := range []struct {
		name    string
		in      []byte
		want    rng.State
		wantErr string
	}{
		{"16 bytes", b, s, ""},
		{"8 bytes is seed only", b[:8], rng.State{Seed: s.Seed}, ""},
		{"empty", nil, rng.State{}, "wrong size"},
		{"15 bytes", b[:15], rng.State{}, "wrong size"},
		{"offset not a multiple of 4", append(append([]byte{}, b[:8]...), 5, 0, 0, 0, 0, 0, 0, 0), rng.State{}, "multiple of 4"},
		{"offset beyond int64", append(append([]byte{}, b[:8]...), 0, 0, 0, 0, 0, 0, 0, 0x80), rng.State{}, "int64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rng.State{Seed: 99, Offset: 4}
			err := got.UnmarshalBinary(tc.in)
			if tc.wantErr != "" {
				assert.ErrorIs(t, err, rng.ErrBadState)
				assert.ErrorContains(t, err, tc.wantErr)
				assert.Equal(t, rng.State{Seed: 99, Offset: 4}, got, "unchanged on error")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func FuzzUnmarshalBinary(f *testing.F) {
	f.Add([]byte{8, 7, 6, 5, 4, 3, 2, 1, 12, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		s := rng.State{Seed: 1, Offset: 8}
		if err := s.UnmarshalBinary(b); err != nil {
			if s != (rng.State{Seed: 1, Offset: 8}) {
				t.Fatalf("a refused state changed the value: %+v", s)
			}
			return
		}
		if len(b) != 8 && len(b) != 16 {
			t.Fatalf("accepted %d bytes", len(b))
		}
		out, err := s.MarshalBinary()
		if err != nil {
			t.Fatalf("an accepted state does not marshal: %v", err)
		}
		if len(b) == 16 && string(out) != string(b) {
			t.Fatalf("round trip changed %x into %x", b, out)
		}
	})
}

func TestQueuedCallsReplayInCallOrder(t *testing.T) {
	ctx := context.Background()
	// PyTorch replays seeds after every other queued call; gpuinit does not.
	g, rt := newGenerators(2)
	require.NoError(t, g.ManualSeed(ctx, 0, 1))
	require.NoError(t, g.SetState(ctx, 0, rng.State{Seed: 5, Offset: 8}))
	require.NoError(t, g.SetState(ctx, 1, rng.State{Seed: 6, Offset: 4}))
	require.NoError(t, g.ManualSeed(ctx, 1, 2))
	assert.False(t, (rt.Stats().State == lazy.Ready), "mutating calls queue")

	states, err := g.StateAll(ctx)
	require.NoError(t, err)
	assert.Equal(t, []rng.State{{Seed: 5, Offset: 8}, {Seed: 2}}, states)
}

func TestBadCallsAreRefusedAtOnce(t *testing.T) {
	ctx := context.Background()
	g, rt := newGenerators(2)
	assert.ErrorIs(t, g.SetState(ctx, 0, rng.State{Seed: 1, Offset: 3}), rng.ErrBadState)
	assert.ErrorIs(t, g.SetStateAll(ctx, []rng.State{{}, {Offset: 2}}), rng.ErrBadState)
	assert.ErrorIs(t, g.ManualSeed(ctx, -1, 1), device.ErrInvalidDevice)
	assert.False(t, (rt.Stats().State == lazy.Ready))
	seed, err := g.InitialSeed(ctx, 0) // reads initialize
	require.NoError(t, err)
	assert.Equal(t, rng.DefaultSeed, seed, "nothing refused was queued")
	assert.True(t, (rt.Stats().State == lazy.Ready))
}

// TestAQueuedCallsFailureIsItsOwn: a ManualSeed queued for a device the host
// turns out not to have fails that call alone. The initialization succeeds
// and every other queued call applies; the runtime records the failure with
// the call site that queued it; and no other call returns it: the next
// ManualSeed, whoever makes it, is made as asked.
func TestAQueuedCallsFailureIsItsOwn(t *testing.T) {
	ctx := context.Background()
	g, rt := newGenerators(2)
	_, _, line, _ := runtime.Caller(0)
	require.NoError(t, g.ManualSeed(ctx, 7, 1)) // only 0 and 1 exist: known at init
	require.NoError(t, g.ManualSeed(ctx, 1, 99))
	require.NoError(t, rt.Init(ctx), "one caller's bad ordinal fails no one else")
	s, err := g.State(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(99), s.Seed, "the call queued after the bad one applied")

	st := rt.Stats()
	failed, more := st.FailedCalls, st.MoreFailedCalls
	require.Len(t, failed, 1)
	assert.Zero(t, more)
	assert.ErrorIs(t, failed[0], device.ErrInvalidDevice)
	assert.Contains(t, failed[0].Site, fmt.Sprintf("rng_test.go:%d ", line+1))
	assert.Contains(t, failed[0].Site, "TestAQueuedCallsFailureIsItsOwn")

	require.NoError(t, g.ManualSeed(ctx, 0, 5), "another caller's next ManualSeed is not failed by the bad one")
	s, err = g.State(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(5), s.Seed, "and it was made as asked")
}

func TestGenerateDrawsCURANDAndAdvancesLikeTorch(t *testing.T) {
	ctx := context.Background()
	g, _ := newGenerators(1)
	require.NoError(t, g.ManualSeed(ctx, 0, 42))
	first := make([]uint32, 6)
	require.NoError(t, g.Generate(ctx, 0, first))
	s, err := g.State(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, rng.State{Seed: 42, Offset: 8}, s, "6 values advance the offset by 8")
	second := make([]uint32, 4)
	require.NoError(t, g.Generate(ctx, 0, second))

	want := make([]uint32, 12)
	philox.FillCURAND(want, 42, 0)
	assert.Equal(t, want[:6], first)
	assert.Equal(t, want[8:12], second)
}

func TestReentrantSetStateFromQueuedCallback(t *testing.T) {
	// PyTorch's hang: a queued callback that sets RNG state re-enters the
	// queue during the drain. Here it runs at once.
	ctx := context.Background()
	g, rt := newGenerators(1)
	require.NoError(t, rt.LazyCall(ctx, func(ctx context.Context) error {
		if err := g.SetState(ctx, 0, rng.State{Seed: 9, Offset: 4}); err != nil {
			return err
		}
		s, err := g.State(ctx, 0)
		if err != nil {
			return err
		}
		if s.Seed != 9 {
			return fmt.Errorf("re-entrant SetState was not applied at once: %+v", s)
		}
		return nil
	}))
	require.NoError(t, rt.Init(ctx))
}

// op is one call of a random sequence; it returns the numbers it drew.
type op func(ctx context.Context, g *rng.Generators) ([]uint32, error)

func randomOps(r *rand.Rand, n, devices int) []op {
	ops := make([]op, n)
	for k := range ops {
		ordinal := r.IntN(devices)
		seed := r.Uint64N(1000)
		offset := 4 * r.Uint64N(100)
		length := r.IntN(9)
		switch r.IntN(5) {
		case 0:
			ops[k] = func(ctx context.Context, g *rng.Generators) ([]uint32, error) {
				return nil, g.ManualSeed(ctx, ordinal, seed)
			}
		case 1:
			ops[k] = func(ctx context.Context, g *rng.Generators) ([]uint32, error) {
				return nil, g.ManualSeedAll(ctx, seed)
			}
		case 2:
			ops[k] = func(ctx context.Context, g *rng.Generators) ([]uint32, error) {
				return nil, g.SetState(ctx, ordinal, rng.State{Seed: seed, Offset: offset})
			}
		case 3:
			states := make([]rng.State, devices)
			for i := range states {
				states[i] = rng.State{Seed: seed + uint64(i), Offset: offset}
			}
			ops[k] = func(ctx context.Context, g *rng.Generators) ([]uint32, error) {
				return nil, g.SetStateAll(ctx, states)
			}
		default:
			ops[k] = func(ctx context.Context, g *rng.Generators) ([]uint32, error) {
				dst := make([]uint32, length)
				return dst, g.Generate(ctx, ordinal, dst)
			}
		}
	}
	return ops
}

func TestLazyEqualsEager(t *testing.T) {
	ctx := context.Background()
	const devices = 3
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 0))
		ops := randomOps(r, 1+r.IntN(12), devices)
		run := func(initFirst bool) ([]rng.State, [][]uint32) {
			g, rt := newGenerators(devices)
			if initFirst {
				require.NoError(t, rt.Init(ctx))
			}
			var drawn [][]uint32
			for _, o := range ops {
				d, err := o(ctx, g)
				require.NoError(t, err)
				drawn = append(drawn, d)
			}
			states, err := g.StateAll(ctx) // initializes the lazy one, if nothing did
			require.NoError(t, err)
			return states, drawn
		}
		eagerStates, eagerDrawn := run(true)
		lazyStates, lazyDrawn := run(false)
		require.Equal(t, eagerStates, lazyStates, "sequence %d", seed)
		require.Equal(t, eagerDrawn, lazyDrawn, "sequence %d", seed)
	}
}

func TestSetStateAllWithWrongCountChangesNothing(t *testing.T) {
	ctx := context.Background()
	g, rt := newGenerators(2)
	require.NoError(t, g.ManualSeed(ctx, 1, 7))
	require.NoError(t, g.SetStateAll(ctx, []rng.State{{Seed: 1}, {Seed: 2}, {Seed: 3}})) // queued: count unknown
	require.NoError(t, rt.Init(ctx), "the bad SetStateAll fails alone")
	s, err := g.State(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, rng.State{Seed: 7}, s, "and changed nothing")
	failed := rt.Stats().FailedCalls
	require.Len(t, failed, 1, "the runtime records it")
	assert.ErrorIs(t, failed[0], rng.ErrBadState)
	assert.ErrorContains(t, failed[0], "3 states for 2 devices")
	require.NoError(t, g.SetStateAll(ctx, []rng.State{{Seed: 1}, {Seed: 2}}), "the next SetStateAll is its own")
	s, err = g.State(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, rng.State{Seed: 2}, s, "and applies")

	g2, _ := newGenerators(2)
	require.NoError(t, g2.ManualSeed(ctx, 1, 7))
	states, err := g2.StateAll(ctx)
	require.NoError(t, err)
	assert.ErrorIs(t, g2.SetStateAll(ctx, []rng.State{{Seed: 1}}), rng.ErrBadState, "refused at once when initialized")
	after, err := g2.StateAll(ctx)
	require.NoError(t, err)
	assert.Equal(t, states, after, "a refused SetStateAll changes nothing")
}

func TestSeedsApplyToTheirDevices(t *testing.T) {
	ctx := context.Background()
	g, rt := newGenerators(3)
	require.NoError(t, g.SetState(ctx, 2, rng.State{Seed: 5, Offset: 8}))
	require.NoError(t, g.ManualSeedAll(ctx, 11)) // queued after SetState: wins on every device
	seed1, err := g.Seed(ctx, 1)
	require.NoError(t, err)
	assert.False(t, (rt.Stats().State == lazy.Ready), "seeding queues")
	states, err := g.StateAll(ctx)
	require.NoError(t, err)
	assert.Equal(t, []rng.State{{Seed: 11}, {Seed: seed1}, {Seed: 11}}, states)

	all, err := g.SeedAll(ctx) // initialized: applied at once
	require.NoError(t, err)
	again, err := g.SeedAll(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, all, again, "non-deterministic seeds (equal with probability 2^-64)")
	states, err = g.StateAll(ctx)
	require.NoError(t, err)
	assert.Equal(t, []rng.State{{Seed: again}, {Seed: again}, {Seed: again}}, states)
	for i := range 3 {
		seed, err := g.InitialSeed(ctx, i)
		require.NoError(t, err)
		assert.Equal(t, again, seed)
	}
}

// noGenerators is a backend without device generators.
type noGenerators struct{ *sim.Backend }

func (noGenerators) NewGenerator() {} // not driver.GeneratorBackend's signature

func TestGenerateWithoutDeviceGeneratorsIsNotSupported(t *testing.T) {
	ctx := context.Background()
	rt := device.New(noGenerators{sim.New()})
	_, ok := rt.Backend().(driver.GeneratorBackend)
	require.False(t, ok)
	g := rng.New(rt)
	require.NoError(t, g.ManualSeed(ctx, 0, 1))
	err := g.Generate(ctx, 0, make([]uint32, 4))
	assert.ErrorIs(t, err, device.ErrNotSupported)
	s, err := g.State(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, rng.State{Seed: 1}, s, "a failed Generate leaves the offset alone")
}

// TestGenerateOnHostDrawsWhatTheDeviceDraws: the same values and the same
// state afterwards as Generate, in the backend's ordering, and without
// device generators too.
func TestGenerateOnHostDrawsWhatTheDeviceDraws(t *testing.T) {
	ctx := context.Background()
	device0, _ := newGenerators(1)
	host, _ := newGenerators(1)
	bare := rng.New(device.New(noGenerators{sim.New()}))
	for _, g := range []*rng.Generators{device0, host, bare} {
		require.NoError(t, g.SetState(ctx, 0, rng.State{Seed: 42, Offset: 8}))
	}
	for _, n := range []int{6, 4, 1, 16} {
		want := make([]uint32, n)
		require.NoError(t, device0.Generate(ctx, 0, want))
		for name, g := range map[string]*rng.Generators{"sim": host, "no device generators": bare} {
			got := make([]uint32, n)
			require.NoError(t, g.GenerateOnHost(ctx, 0, got), name)
			assert.Equal(t, want, got, "%s: %d values", name, n)
		}
	}
	want, _ := device0.State(ctx, 0)
	for _, g := range []*rng.Generators{host, bare} {
		s, err := g.State(ctx, 0)
		require.NoError(t, err)
		assert.Equal(t, want, s, "the state advances as Generate's does")
	}
}

func TestOrderingFollowsTheBackendsRegistration(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		ordering driver.Ordering
		want     string
		fill     func([]uint32, uint64, uint64)
	}{
		{"a cuRAND-like backend", driver.OrderingCURAND, "curand", philox.FillCURAND},
		{"a rocRAND-like backend", driver.OrderingSequential, "rocrand", philox.FillSequential},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g device.Registry
			g.Register(driver.Registration{Name: "gpu", Ordering: tc.ordering,
				Open: func() (driver.Backend, error) { return sim.New(), nil }})
			rt, err := g.Open("gpu")
			require.NoError(t, err)
			o := rng.OrderingOf(rt)
			assert.Equal(t, tc.want, o.String())
			got, want := make([]uint32, 64), make([]uint32, 64)
			o.Fill(got, 7, 5)
			tc.fill(want, 7, 5)
			assert.Equal(t, want, got)

			gens := rng.New(rt)
			defer gens.Close()
			require.NoError(t, gens.SetState(ctx, 0, rng.State{Seed: 7, Offset: 8}))
			require.NoError(t, gens.GenerateOnHost(ctx, 0, got))
			tc.fill(want, 7, 8)
			assert.Equal(t, want, got, "the host draw follows the registration too")
		})
	}
	assert.Equal(t, rng.CURAND, rng.OrderingOf(device.New(sim.New())), "a Runtime made by New has the default")
}

// unwrapping wraps a Backend the way a logging or fault-injecting wrapper
// would: only the Backend methods, and Unwrap.
type unwrapping struct{ driver.Backend }

func (u unwrapping) Unwrap() driver.Backend { return u.Backend }

func TestGenerateFindsGeneratorsThroughAWrapper(t *testing.T) {
	ctx := context.Background()
	g := rng.New(device.New(unwrapping{sim.New()}))
	require.NoError(t, g.ManualSeed(ctx, 0, 42))
	got := make([]uint32, 8)
	require.NoError(t, g.Generate(ctx, 0, got), "the wrapped sim's generators, not ErrNotSupported")
	want := make([]uint32, 8)
	philox.FillCURAND(want, 42, 0)
	assert.Equal(t, want, got)
}

func TestANilContextPanicsNamingTheMethod(t *testing.T) {
	g := rng.New(device.New(sim.New()))
	var nilCtx context.Context
	for name, call := range map[string]func(){
		"ManualSeed":     func() { _ = g.ManualSeed(nilCtx, 0, 1) },
		"ManualSeedAll":  func() { _ = g.ManualSeedAll(nilCtx, 1) },
		"Seed":           func() { _, _ = g.Seed(nilCtx, 0) },
		"SeedAll":        func() { _, _ = g.SeedAll(nilCtx) },
		"SetState":       func() { _ = g.SetState(nilCtx, 0, rng.State{}) },
		"SetStateAll":    func() { _ = g.SetStateAll(nilCtx, nil) },
		"InitialSeed":    func() { _, _ = g.InitialSeed(nilCtx, 0) },
		"State":          func() { _, _ = g.State(nilCtx, 0) },
		"StateAll":       func() { _, _ = g.StateAll(nilCtx) },
		"Generate":       func() { _ = g.Generate(nilCtx, 0, make([]uint32, 4)) },
		"GenerateOnHost": func() { _ = g.GenerateOnHost(nilCtx, 0, make([]uint32, 4)) },
	} {
		assert.PanicsWithValue(t, "rng: Generators."+name+" called with a nil Context", call, name)
	}
}

// TestEveryFailureOfACallIsItsOwn: calls made while the initialization
// drains its queue either run at once, returning their own error, or are
// queued, their failure recorded by the runtime: never lost, and never
// returned to another call.
func TestEveryFailureOfACallIsItsOwn(t *testing.T) {
	ctx := context.Background()
	g, rt := newGenerators(2)
	var wg sync.WaitGroup
	var ranAtOnce, queued atomic.Int64
	for range 100 {
		wg.Go(func() {
			if err := g.ManualSeed(ctx, 7, 1); err == nil {
				queued.Add(1)
			} else {
				assert.ErrorIs(t, err, device.ErrInvalidDevice)
				assert.ErrorContains(t, err, "7", "its own ordinal's failure")
				ranAtOnce.Add(1)
			}
		})
	}
	wg.Go(func() { assert.NoError(t, rt.Init(ctx)) })
	wg.Wait()
	st := rt.Stats()
	failed, more := st.FailedCalls, st.MoreFailedCalls
	assert.Equal(t, queued.Load(), int64(len(failed)+more), "each queued call's failure is recorded")
	assert.NoError(t, g.ManualSeed(ctx, 0, 1), "and returned to no later call")
	t.Logf("%d ran at once, %d were queued", ranAtOnce.Load(), queued.Load())
}
