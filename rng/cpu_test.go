package rng_test

import (
	"context"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/rng"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// drawn is what device ordinal draws from seed at offset, n values.
func drawn(seed, offset uint64, n int) []uint32 {
	out := make([]uint32, n)
	philox.FillCURAND(out, seed, offset)
	return out
}

// TestAfterAFallbackTheQueuedCallsDrawOnTheCPU: where the initialization
// finds no GPU, GenerateOnHost on the Generators that queued the seeds draws
// what each device would have drawn, with no seed given again: the queued
// calls apply to the CPU's states in call order, and later calls apply
// there at once.
func TestAfterAFallbackTheQueuedCallsDrawOnTheCPU(t *testing.T) {
	ctx := context.Background()
	rt := device.New(sim.New(sim.WithFailure(sim.NoDriver)))
	gens := rng.New(rt)
	require.NoError(t, gens.ManualSeed(ctx, 0, 42))
	require.NoError(t, gens.ManualSeedAll(ctx, 5))
	require.NoError(t, gens.ManualSeed(ctx, 1, 9))
	require.NoError(t, gens.SetState(ctx, 2, rng.State{Seed: 3, Offset: 8}))

	err := rt.Init(ctx)
	require.True(t, device.FallBackToCPU(err), "no driver: no GPU here (%v)", err)

	for _, tc := range []struct {
		name    string
		ordinal int
		want    []uint32
	}{
		{"ManualSeedAll after device 0's seed wins", 0, drawn(5, 0, 4)},
		{"ManualSeed after ManualSeedAll wins", 1, drawn(9, 0, 4)},
		{"SetState's seed and offset", 2, drawn(3, 8, 4)},
		{"an ordinal no call named has ManualSeedAll's seed", 7, drawn(5, 0, 4)},
	} {
		buf := make([]uint32, 4)
		require.NoError(t, gens.GenerateOnHost(ctx, tc.ordinal, buf), tc.name)
		assert.Equal(t, tc.want, buf, tc.name)
	}
	buf := make([]uint32, 4)
	require.NoError(t, gens.GenerateOnHost(ctx, 0, buf))
	assert.Equal(t, drawn(5, 4, 4), buf, "the second draw goes on where the first ended")

	require.NoError(t, gens.ManualSeed(ctx, 0, 11), "a call after the fallback applies on the CPU")
	s, err := gens.State(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, rng.State{Seed: 11}, s)
	require.NoError(t, gens.SetStateAll(ctx, []rng.State{{Seed: 1}, {Seed: 2, Offset: 4}}), "no device count on the CPU")
	s, err = gens.State(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, rng.State{Seed: 2, Offset: 4}, s, "SetStateAll sets ordinals 0 to len-1")

	assert.ErrorIs(t, gens.Generate(ctx, 0, buf), device.ErrDriverNotFound, "there is no device to draw on")
	assert.ErrorIs(t, gens.GenerateOnHost(ctx, -1, buf), device.ErrInvalidDevice)
}

// TestOnlyAHostWithoutAGPUFallsBackToTheCPU: a GPU that is broken or not
// ready yet is never served around on the CPU: GenerateOnHost returns the
// initialization's failure, as every other call does.
func TestOnlyAHostWithoutAGPUFallsBackToTheCPU(t *testing.T) {
	for _, f := range []sim.Failure{sim.NotReady, sim.DriverMismatch, sim.Unknown} {
		ctx := context.Background()
		rt := device.New(sim.New(sim.WithFailure(f)))
		gens := rng.New(rt)
		require.NoError(t, gens.ManualSeed(ctx, 0, 42))
		err := gens.GenerateOnHost(ctx, 0, make([]uint32, 4))
		require.Error(t, err, f)
		assert.False(t, device.FallBackToCPU(err), f)
		assert.Equal(t, err, rt.Init(ctx), "%s: the initialization's own failure", f)
		err = gens.ManualSeed(ctx, 0, 1)
		assert.Error(t, err, "%s: no call is made on the CPU", f)
		assert.False(t, device.FallBackToCPU(err), f)
	}
}

// TestACallMadeFirstAfterTheFallbackAppliesAfterTheQueuedOnes: a mutating
// call that is the first to meet the failed initialization makes the move
// onto the CPU itself, after the calls queued before it, and returns nil.
func TestACallMadeFirstAfterTheFallbackAppliesAfterTheQueuedOnes(t *testing.T) {
	ctx := context.Background()
	rt := device.New(sim.New(sim.WithFailure(sim.NoDriver)))
	gens := rng.New(rt)
	require.NoError(t, gens.ManualSeed(ctx, 0, 42))
	require.True(t, device.FallBackToCPU(rt.Init(ctx)))
	require.NoError(t, gens.SetState(ctx, 0, rng.State{Seed: 42, Offset: 4}), "made on the CPU")
	buf := make([]uint32, 4)
	require.NoError(t, gens.GenerateOnHost(ctx, 0, buf))
	assert.Equal(t, drawn(42, 4, 4), buf, "after the queued seed, not before it")
}
