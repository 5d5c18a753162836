package rng_test

import (
	"context"
	"sync"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/rng"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHostDrawsWhatADeviceWould(t *testing.T) {
	ctx := context.Background()
	gens := rng.New(device.New(sim.New()))
	defer gens.Close()
	require.NoError(t, gens.ManualSeed(ctx, 0, 42))
	host := rng.NewHost(rng.CURAND, 42)
	for _, n := range []int{5, 16, 1, 3} {
		onDevice, onHost := make([]uint32, n), make([]uint32, n)
		require.NoError(t, gens.Generate(ctx, 0, onDevice))
		from, err := host.Generate(onHost)
		require.NoError(t, err)
		assert.Equal(t, onDevice, onHost, "%d values", n)
		st, err := gens.State(ctx, 0)
		require.NoError(t, err)
		assert.Equal(t, st, host.State(), "the state advances by whole blocks, as the device's")
		assert.Equal(t, uint64(42), from.Seed)
	}
}

func TestHostKeepsOneStreamAcrossGoroutines(t *testing.T) {
	host := rng.NewHost(rng.ROCRAND, 7)
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				from, err := host.Generate(make([]uint32, 4))
				assert.NoError(t, err)
				mu.Lock()
				assert.False(t, seen[from.Offset], "offset %d drawn twice", from.Offset)
				seen[from.Offset] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, rng.State{Seed: 7, Offset: 4 * 400}, host.State())
	want := make([]uint32, 4)
	philox.FillSequential(want, 7, 1600)
	got := make([]uint32, 4)
	_, err := host.Generate(got)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestHostRefusesWhatWouldBreakTorchsState(t *testing.T) {
	host := rng.NewHost(rng.CURAND, 1)
	assert.ErrorIs(t, host.SetState(rng.State{Seed: 1, Offset: 6}), rng.ErrBadState)
	require.NoError(t, host.SetState(rng.State{Seed: 1, Offset: 1<<63 - 4}))
	_, err := host.Generate(make([]uint32, 8))
	assert.ErrorIs(t, err, rng.ErrBadState)
	assert.ErrorContains(t, err, "reseed the host generator")
	assert.Equal(t, rng.State{Seed: 1, Offset: 1<<63 - 4}, host.State(), "unchanged")
}
