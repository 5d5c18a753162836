package rng_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/rng"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hangingDraws is sim whose device 0's generator's Generate blocks until
// release, as a GPU whose kernels never complete.
type hangingDraws struct {
	*sim.Backend
	release chan struct{}
	entered chan struct{}
	closed  atomic.Int64
}

func (h *hangingDraws) NewGenerator(ordinal int) (driver.Generator, error) {
	g, err := h.Backend.NewGenerator(ordinal)
	if err != nil || ordinal != 0 {
		return &closeCountedGen{Generator: g, h: h}, err
	}
	return &hangingGen{closeCountedGen{Generator: g, h: h}}, nil
}

type closeCountedGen struct {
	driver.Generator
	h *hangingDraws
}

func (g *closeCountedGen) Close() error { g.h.closed.Add(1); return g.Generator.Close() }

type hangingGen struct{ closeCountedGen }

func (g *hangingGen) Generate(dst []uint32) error {
	g.h.entered <- struct{}{}
	<-g.h.release
	return g.Generator.Generate(dst)
}

// TestAHungDrawHoldsUpNothingElse: a draw stuck in the driver loses its
// device as hung at the call deadline; draws behind it return when their own
// context ends, and at once once the device is lost; Close never waits for
// it.
func TestAHungDrawHoldsUpNothingElse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &hangingDraws{Backend: sim.New(), release: make(chan struct{}), entered: make(chan struct{}, 1)}
		rt := device.New(h)
		defer rt.Shutdown(context.Background())
		rt.SetCallDeadline(time.Second)
		gens := rng.New(rt)
		ctx := context.Background()
		first := make(chan error, 1)
		go func() { first <- gens.Generate(ctx, 0, make([]uint32, 4)) }()
		<-h.entered // the first draw is in the driver

		waitCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		start := time.Now()
		err := gens.Generate(waitCtx, 0, make([]uint32, 4))
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded, "waited behind the hung draw no longer than its own context")
		assert.Equal(t, 200*time.Millisecond, time.Since(start))
		_, err = gens.State(waitCtx, 0)
		assert.ErrorIs(t, err, context.DeadlineExceeded, "reading the state waits no longer either")

		for !(len(rt.Stats().Lost) > 0) {
			time.Sleep(10 * time.Millisecond)
		}
		assert.ErrorIs(t, rt.Stats().Lost[0], driver.ErrDeviceHung)
		assert.Equal(t, "Generator.Generate", rt.Stats().Lost[0].Err.Op)
		start = time.Now()
		err = gens.Generate(ctx, 0, make([]uint32, 4))
		assert.ErrorIs(t, err, driver.ErrDeviceHung, "refused at once once lost")
		assert.Zero(t, time.Since(start))
		require.NoError(t, gens.Generate(ctx, 1, make([]uint32, 4)), "the other device draws")

		require.NoError(t, gens.Close(), "Close does not wait for the hung draw")
		assert.Equal(t, int64(1), h.closed.Load(), "device 1's generator, which was free, is closed")
		close(h.release)
		assert.NoError(t, <-first, "the hung draw's own values are good when it returns at last")
		assert.Equal(t, int64(1), h.closed.Load(),
			"device 0's generator is left to the process's end: a lost device's driver is not called again, Close included")
	})
}
