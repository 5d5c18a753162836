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
// change of the errors' shape must keep every row.
func TestEveryBadStateAUserMeetsIsErrBadState(t *testing.T) {
	ctx := context.Background()
	const lastOffset = 1<<63 - 4 // the largest multiple of 4 torch's int64 holds
	for _, tc := range []struct {
		name    string
		produce func(t *testing.T) error
	}{
		{"a saved state of the wrong size", func(t *testing.T) error {
			var s rng.State
			return s.UnmarshalBinary(make([]byte, 5))
		}},
		{"a saved state whose offset is not a multiple of 4", func(t *testing.T) error {
			b, err := rng.State{Seed: 1, Offset: 4}.MarshalBinary()
			require.NoError(t, err)
			b[8] = 6
			var s rng.State
			return s.UnmarshalBinary(b)
		}},
		{"SetState with an offset that is not a multiple of 4", func(t *testing.T) error {
			g, _ := newGenerators(2)
			return g.SetState(ctx, 0, rng.State{Seed: 1, Offset: 3})
		}},
		{"SetStateAll with more states than devices", func(t *testing.T) error {
			g, rt := newGenerators(2)
			require.NoError(t, rt.Init(ctx))
			return g.SetStateAll(ctx, make([]rng.State, 3))
		}},
		{"a draw that would pass torch's offset limit", func(t *testing.T) error {
			g, rt := newGenerators(2)
			require.NoError(t, rt.Init(ctx))
			require.NoError(t, g.SetState(ctx, 0, rng.State{Seed: 1, Offset: lastOffset}))
			return g.Generate(ctx, 0, make([]uint32, 8))
		}},
		{"Host.SetState with an offset that is not a multiple of 4", func(t *testing.T) error {
			return rng.NewHost(rng.CURAND, 1).SetState(rng.State{Offset: 2})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.produce(t)
			require.Error(t, err)
			assert.True(t, errors.Is(err, rng.ErrBadState), "%v", err)
		})
	}
}
