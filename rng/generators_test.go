package rng_test

import (
	"context"
	"errors"
	"github.com/gpuinit/gpuinit/device/sim"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/rng"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEverySentinelGeneratorsReturnStillMatches: rng.ErrClosed, and the
// device sentinels that Generators pass on, produced as a user meets them,
// still match errors.Is. ErrBadState's rows are in state_test.go, beside its
// declaration. A change of the errors' shape must keep every row.
func TestEverySentinelGeneratorsReturnStillMatches(t *testing.T) {
	ctx := context.Background()
	closed := func(t *testing.T) *rng.Generators {
		g, rt := newGenerators(2)
		require.NoError(t, rt.Init(ctx))
		require.NoError(t, g.Close())
		return g
	}
	for _, tc := range []struct {
		name    string
		produce func(t *testing.T) error
		is      error
	}{
		{"ManualSeed after Close", func(t *testing.T) error { return closed(t).ManualSeed(ctx, 0, 1) }, rng.ErrClosed},
		{"Generate after Close", func(t *testing.T) error {
			return closed(t).Generate(ctx, 0, make([]uint32, 4))
		}, rng.ErrClosed},
		{"State after Close", func(t *testing.T) error { _, err := closed(t).State(ctx, 0); return err }, rng.ErrClosed},
		{"a negative ordinal", func(t *testing.T) error {
			g, _ := newGenerators(2)
			return g.ManualSeed(ctx, -1, 1)
		}, device.ErrInvalidDevice},
		{"an ordinal past the devices", func(t *testing.T) error {
			g, rt := newGenerators(2)
			require.NoError(t, rt.Init(ctx))
			_, err := g.State(ctx, 2)
			return err
		}, device.ErrInvalidDevice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.produce(t)
			require.Error(t, err)
			assert.True(t, errors.Is(err, tc.is), "%v", err)
		})
	}
}

// TestADevicesFailureSaysRngsPrefixOnce: device's error, passed on by
// rng, reads under rng's prefix alone ("rng: creating the generator of
// device 0: device: backend sim ..." once said two), and still matches.
func TestADevicesFailureSaysRngsPrefixOnce(t *testing.T) {
	rt := device.New(noGenerators{sim.New()})
	t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
	g := rng.New(rt)
	err := g.Generate(context.Background(), 0, make([]uint32, 4))
	require.Error(t, err)
	assert.ErrorIs(t, err, device.ErrNotSupported)
	msg := err.Error()
	assert.True(t, strings.HasPrefix(msg, "rng: creating the generator of device 0: "), msg)
	assert.NotContains(t, msg, "device: ", "one package's prefix")
}
