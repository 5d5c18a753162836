package device_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stuckWatch is a sim whose health watch, once it has reported both devices
// watched, stays in a "driver call" that ignores its context until release
// is closed (an NVML wait on a dead GPU), then reports device 0 watched
// again.
type stuckWatch struct {
	*sim.Backend
	release chan struct{}
}

func (b *stuckWatch) WatchHealth(_ context.Context, report func(driver.HealthEvent)) error {
	for ordinal := range 2 {
		report(driver.HealthEvent{Ordinal: ordinal, Kind: driver.HealthWatching})
	}
	<-b.release
	report(driver.HealthEvent{Ordinal: 0, Kind: driver.HealthWatching})
	return nil
}

// TestShutdownAbandonsAHealthWatchStuckInTheDriver: Shutdown returns by its
// ctx though the watch never returns, says the watch was abandoned, and
// drops what the watch reports once it does return.
func TestShutdownAbandonsAHealthWatchStuckInTheDriver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &stuckWatch{Backend: sim.New(), release: make(chan struct{})}
		rt := device.New(b)
		require.NoError(t, rt.Init(context.Background()))
		synctest.Wait()
		require.True(t, rt.Stats().Health[1].Watched)

		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err := rt.Shutdown(ctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorContains(t, err, "abandoning the health watch")
		assert.Equal(t, 2*time.Second, time.Since(start), "Shutdown waits until its ctx ends, on the bubble's clock, and no longer")
		st := rt.Stats()
		assert.True(t, st.HealthWatchAbandoned)
		for _, h := range st.Health {
			assert.False(t, h.Watched)
			assert.Contains(t, h.Why, "abandoned")
		}
		start = time.Now()
		assert.Equal(t, err, rt.Shutdown(context.Background()), "a second Shutdown returns the first one's result")
		assert.Zero(t, time.Since(start), "and does not wait again")

		close(b.release) // the driver call returns at last
		synctest.Wait()
		assert.False(t, rt.Stats().Health[0].Watched, "a late event is dropped")
	})
}

// slowToStop is a sim whose health watch takes half a second to return once
// told to stop, as a wait in the driver finishing its timeout.
type slowToStop struct {
	*sim.Backend
	returned atomic.Bool
}

func (b *slowToStop) WatchHealth(ctx context.Context, _ func(driver.HealthEvent)) error {
	<-ctx.Done()
	time.Sleep(500 * time.Millisecond)
	b.returned.Store(true)
	return nil
}

func (b *slowToStop) Unwrap() driver.Backend { return b.Backend }

// TestCloseWaitsForAHealthWatchThatStops: a watch that returns within
// HealthStopGrace is waited for, not abandoned.
func TestCloseWaitsForAHealthWatchThatStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &slowToStop{Backend: sim.New()}
		rt := device.New(b)
		require.NoError(t, rt.Init(context.Background()))
		synctest.Wait()
		start := time.Now()
		require.NoError(t, rt.Shutdown(context.Background()))
		assert.True(t, b.returned.Load(), "Close returned after the watch did")
		assert.Equal(t, 500*time.Millisecond, time.Since(start), "the watch's half second, no more")
		assert.False(t, rt.Stats().HealthWatchAbandoned)
	})
}

// panickingMemory is a sim whose memory reads panic, and counts them.
type panickingMemory struct {
	*sim.Backend
	mu    sync.Mutex
	reads int
}

func (b *panickingMemory) ReadMemory(int) (driver.Memory, error) {
	b.mu.Lock()
	b.reads++
	b.mu.Unlock()
	panic("the driver's memory read panicked")
}

func (b *panickingMemory) MemoryInfo(o int) (free, total uint64, err error) {
	_, err = b.ReadMemory(o)
	return 0, 0, err
}

// TestAPanickingMemoryReadDoesNotLaterLoseTheDeviceAsHung: the read's slot
// is released as the panic unwinds, so the monitor sees no call past its
// deadline.
func TestAPanickingMemoryReadDoesNotLaterLoseTheDeviceAsHung(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rt := device.New(&panickingMemory{Backend: sim.New()})
		defer rt.Shutdown(context.Background())
		rt.SetCallDeadline(100 * time.Millisecond)
		require.NoError(t, rt.Init(ctx))
		assert.PanicsWithValue(t, "the driver's memory read panicked", func() { _, _ = rt.Memory(ctx, 0) })
		time.Sleep(time.Second) // ten deadlines, on the bubble's clock
		assert.False(t, (len(rt.Stats().Lost) > 0), "lost: %v", rt.Stats().Lost)
		assert.NoError(t, rt.CheckDevice(0))
	})
}

// TestMemoryOfALostDeviceIsRefusedWithoutADriverCall: as Do and the
// generators are.
func TestMemoryOfALostDeviceIsRefusedWithoutADriverCall(t *testing.T) {
	ctx := context.Background()
	b := &panickingMemory{Backend: sim.New()}
	rt := device.New(b)
	defer rt.Shutdown(context.Background())
	require.NoError(t, rt.Init(ctx))
	sticky := &device.DriverError{Backend: "sim", Op: "cuLaunchKernel", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Sticky: true}
	require.ErrorIs(t, rt.ReportError(1, sticky), device.ErrDeviceLost)
	_, err := rt.Memory(ctx, 1)
	assert.ErrorIs(t, err, device.ErrDeviceLost)
	_, err = rt.Memory(ctx, 1)
	assert.ErrorIs(t, err, device.ErrDeviceLost)
	b.mu.Lock()
	defer b.mu.Unlock()
	assert.Zero(t, b.reads, "the driver was called for a lost device")
}

// TestCallsPastTheWatchedOnesAreCountedInHealth: with every slot of device
// 0 taken, one more call runs unwatched, and Health counts it.
func TestCallsPastTheWatchedOnesAreCountedInHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rt := device.New(sim.New())
		defer rt.Shutdown(context.Background())
		require.NoError(t, rt.Init(ctx))
		release := make(chan struct{})
		var wg sync.WaitGroup
		const watched = 64 // the slots per device
		for range watched {
			wg.Go(func() { assert.NoError(t, rt.Do(ctx, 0, func() error { <-release; return nil })) })
		}
		synctest.Wait() // every call holds its slot
		assert.Zero(t, rt.Stats().Health[0].UnwatchedCalls)
		require.NoError(t, rt.Do(ctx, 0, func() error { return nil }))
		require.NoError(t, rt.Do(ctx, 1, func() error { return nil }))
		h := rt.Stats().Health
		assert.Equal(t, int64(1), h[0].UnwatchedCalls)
		assert.Zero(t, h[1].UnwatchedCalls)
		close(release)
		wg.Wait()
		assert.False(t, (len(rt.Stats().Lost) > 0))
	})
}

// TestAHungCallLeavesTheMonitorAsleep: once the one call in flight is
// reported hung, the monitor stops scanning, using no CPU for the rest of
// the process; a new call on another device wakes it, and is watched.
func TestAHungCallLeavesTheMonitorAsleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rt := device.New(sim.New())
		defer rt.Shutdown(context.Background())
		rt.SetCallDeadline(100 * time.Millisecond)
		require.NoError(t, rt.Init(ctx))
		release := make(chan struct{})
		var wg sync.WaitGroup
		defer wg.Wait()
		defer close(release)
		hang := func(ordinal int) {
			wg.Go(func() { _ = rt.Do(ctx, ordinal, func() error { <-release; return nil }) })
		}
		hang(0)
		for !(len(rt.Stats().Lost) > 0) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		assert.False(t, device.CallMonitorScanning(rt), "the monitor scans on for a call it has reported hung")

		hang(1)
		synctest.Wait()
		assert.True(t, device.CallMonitorScanning(rt), "a new call wakes the monitor")
		for len(rt.Stats().Lost) < 2 {
			time.Sleep(time.Millisecond)
		}
		assert.ErrorIs(t, rt.CheckDevice(1), driver.ErrDeviceHung)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.False(t, device.CallMonitorScanning(rt))
	})
}
