package rng_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gpuinit/gpuinit/rng"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryBadStateAUserMeetsIsErrBadState: every refusal of a generator
// state, as a user meets it through the public API, still matches
// rng.ErrBadState with errors.Is. The table lists where users match it; a
// change of the errors' shape must keep every row. Each message says rng's
// prefix once, first, and the sentinel last.
func TestEveryBadStateAUserMeetsIsErrBadState(t *testing.T) {
	ctx := context.Background()
	const lastOffset = 1<<63 - 4 // the largest multiple of 4 torch's int64 holds
	for _, tc := range []struct {
		name    string
		produce func(t *testing.T) error
		says    string
	}{
		{"a saved state of the wrong size", func(t *testing.T) error {
			var s rng.State
			return s.UnmarshalBinary(make([]byte, 5))
		}, "rng: 5 bytes; want 16 (seed, offset) or 8 (seed): wrong size: bad generator state"},
		{"a saved state whose offset is not a multiple of 4", func(t *testing.T) error {
			b, err := rng.State{Seed: 1, Offset: 4}.MarshalBinary()
			require.NoError(t, err)
			b[8] = 6
			var s rng.State
			return s.UnmarshalBinary(b)
		}, "rng: offset 6 is not a multiple of 4: bad generator state"},
		{"SetState with an offset that is not a multiple of 4", func(t *testing.T) error {
			g, _ := newGenerators(2)
			return g.SetState(ctx, 0, rng.State{Seed: 1, Offset: 3})
		}, "rng: offset 3 is not a multiple of 4: bad generator state"},
		{"SetStateAll with a state whose offset is not a multiple of 4", func(t *testing.T) error {
			g, _ := newGenerators(2)
			return g.SetStateAll(ctx, []rng.State{{}, {Offset: 2}})
		}, "rng: device 1: offset 2 is not a multiple of 4: bad generator state"},
		{"SetStateAll with more states than devices", func(t *testing.T) error {
			g, rt := newGenerators(2)
			require.NoError(t, rt.Init(ctx))
			return g.SetStateAll(ctx, make([]rng.State, 3))
		}, "rng: 3 states for 2 devices: bad generator state"},
		{"a draw that would pass torch's offset limit", func(t *testing.T) error {
			g, rt := newGenerators(2)
			require.NoError(t, rt.Init(ctx))
			require.NoError(t, g.SetState(ctx, 0, rng.State{Seed: 1, Offset: lastOffset}))
			return g.Generate(ctx, 0, make([]uint32, 8))
		}, "rng: drawing 8 values from offset 9223372036854775804 would pass torch's offset limit 9223372036854775807; reseed device 0: bad generator state"},
		{"Host.SetState with an offset that is not a multiple of 4", func(t *testing.T) error {
			return rng.NewHost(rng.CURAND, 1).SetState(rng.State{Offset: 2})
		}, "rng: Host.SetState: offset 2 is not a multiple of 4: bad generator state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.produce(t)
			require.Error(t, err)
			assert.True(t, errors.Is(err, rng.ErrBadState), "%v", err)
			assert.EqualError(t, err, tc.says)
		})
	}
}
