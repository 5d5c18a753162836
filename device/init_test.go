package device_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewAndLazyCallTouchNoBackend(t *testing.T) {
	c := &devicetest.Counting{Backend: sim.New()}
	r := device.New(c)
	require.NoError(t, r.LazyCall(context.Background(), func(context.Context) error { return nil }))
	assert.Zero(t, c.Calls().Total())
	assert.Equal(t, lazy.Uninitialized, r.Stats().State)
	assert.False(t, (r.Stats().State == lazy.Ready))
}

func TestInitCallsBackendOnceAndMemoizesFailure(t *testing.T) {
	c := &devicetest.Counting{Backend: sim.New(sim.WithFailure(sim.NoDevice))}
	r := device.New(c)
	ctx := context.Background()
	site := fmt.Sprintf("init_test.go:%d", lineOfNext())
	require.NoError(t, r.LazyCall(ctx, func(context.Context) error { t.Error("queued call ran"); return nil }))

	for range 3 {
		_, err := r.DeviceCount(ctx)
		require.ErrorIs(t, err, device.ErrNoDevice)
		var de *device.DriverError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, 100, de.Code)
		assert.Equal(t, "CUDA_ERROR_NO_DEVICE", de.Name)
		assert.Contains(t, err.Error(), "CUDA_VISIBLE_DEVICES", "the message carries a hint")
		var ie *lazy.InitError
		require.ErrorAs(t, err, &ie)
		require.Len(t, ie.NotRun, 1)
		assert.Contains(t, ie.NotRun[0], site, "the queued call's site is the caller of LazyCall")
	}
	assert.Equal(t, int64(1), c.Calls().Init)
	assert.ErrorIs(t, r.LazyCall(ctx, func(context.Context) error { return nil }), device.ErrNoDevice)
}

func TestConcurrentFirstTouchInitializesOnce(t *testing.T) {
	c := &devicetest.Counting{Backend: sim.New(sim.WithDevices(3))}
	r := device.New(c)
	ctx := context.Background()
	var queued, wg sync.WaitGroup
	var ran atomic.Int64
	for g := range 16 {
		wg.Go(func() {
			queued.Add(1)
			_ = r.LazyCall(ctx, func(context.Context) error { ran.Add(1); queued.Done(); return nil })
			n, err := r.DeviceCount(ctx)
			assert.NoError(t, err)
			assert.Equal(t, 3, n)
			info, err := r.Device(ctx, g%3)
			assert.NoError(t, err)
			assert.Equal(t, g%3, info.Ordinal)
			assert.Equal(t, "sm_90", info.Arch)
		})
	}
	wg.Wait()
	queued.Wait()
	assert.Equal(t, int64(16), ran.Load())
	calls := c.Calls()
	assert.Equal(t, int64(1), calls.Init)
	assert.Equal(t, int64(1), calls.Count)
	assert.Equal(t, int64(3), calls.Device, "device information is read once, at init")
}
