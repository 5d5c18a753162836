package device_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAfterShutdownEveryCallIsClosed: every call of a Runtime that was shut
// down returns ErrClosed (Stats still answers, and says so), and Open of
// its name gives a fresh Runtime that works.
func TestAfterShutdownEveryCallIsClosed(t *testing.T) {
	var g device.Registry
	g.Register(simRegistration(newSim))
	rt := openIn(t, &g, "sim")
	ctx := context.Background()
	require.NoError(t, rt.Init(ctx))
	require.NoError(t, rt.Shutdown(ctx))
	assert.True(t, rt.Stats().Closed)
	for name, call := range map[string]func() error{
		"Init":                 func() error { return rt.Init(ctx) },
		"Start":                func() error { return rt.Start(ctx) },
		"LazyCall":             func() error { return rt.LazyCall(ctx, func(context.Context) error { return nil }) },
		"DeviceCount":          func() error { _, err := rt.DeviceCount(ctx); return err },
		"Device":               func() error { _, err := rt.Device(ctx, 0); return err },
		"Devices":              func() error { _, err := rt.Devices(ctx); return err },
		"Memory":               func() error { _, err := rt.Memory(ctx, 0); return err },
		"Do":                   func() error { return rt.Do(ctx, 0, func() error { t.Error("ran after Shutdown"); return nil }) },
		"NewGenerator":         func() error { _, err := rt.NewGenerator(ctx, 0); return err },
		"Canary":               func() error { return rt.Canary(ctx, 0) },
		"DeviceMap":            func() error { _, err := rt.DeviceMap(ctx); return err },
		"CheckDevice":          func() error { return rt.CheckDevice(0) },
		"ReportError":          func() error { return rt.ReportError(0, errors.New("x")) },
		"UsePreflight":         func() error { return rt.UsePreflight(device.Preflight{}) },
		"RequireDriverVersion": func() error { return rt.RequireDriverVersion("sim", 1) },
	} {
		assert.ErrorIs(t, call(), device.ErrClosed, name)
	}
	fresh := openIn(t, &g, "sim")
	assert.NotSame(t, rt, fresh, "never the closed Runtime")
	require.NoError(t, fresh.Init(ctx), "the fresh one works")
	require.NoError(t, fresh.Shutdown(ctx))
}

// TestShutdownReturnsByItsContext: with a hung call or a health watch stuck
// in the driver, Shutdown returns when its ctx ends, says what it
// abandoned, and wraps ctx's error; a second Shutdown returns the same.
func TestShutdownReturnsByItsContext(t *testing.T) {
	for _, tc := range []struct {
		name      string
		backend   func() driver.Backend
		hang      func(rt *device.Runtime, release chan struct{})
		abandoned string
	}{
		{"a call hung in the driver", func() driver.Backend { return sim.New() },
			func(rt *device.Runtime, release chan struct{}) {
				go func() { _ = rt.Do(context.Background(), 0, func() error { <-release; return nil }) }()
			}, "1 driver call(s) in flight"},
		{"a health watch stuck in the driver", func() driver.Backend { return &stuckWatch{Backend: sim.New(), release: make(chan struct{})} },
			func(*device.Runtime, chan struct{}) {}, "the health watch, in its driver call"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := tc.backend()
				rt := device.New(b)
				require.NoError(t, rt.Init(context.Background()))
				release := make(chan struct{})
				tc.hang(rt, release)
				synctest.Wait()
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				start := time.Now()
				err := rt.Shutdown(ctx)
				assert.Equal(t, 300*time.Millisecond, time.Since(start), "by its ctx, on the bubble's clock")
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.ErrorContains(t, err, tc.abandoned)
				assert.Equal(t, err, rt.Shutdown(context.Background()), "a second Shutdown returns the first one's result")
				close(release)
				if sw, ok := b.(*stuckWatch); ok {
					close(sw.release)
				}
				synctest.Wait()
			})
		})
	}
}

// TestShutdownStopsAPreflightRetrying: Shutdown while the preflight waits to
// retry ends the wait, leaves no child, and the initialization fails with
// ErrClosed.
func TestShutdownStopsAPreflightRetrying(t *testing.T) {
	rt, c := preflighted(t, true, device.Preflight{Deadline: time.Hour, Backoff: time.Hour, RetryFor: 2 * time.Hour})
	t.Setenv(envChildDoes, "not-ready-times")
	t.Setenv(envChildCounter, filepath.Join(t.TempDir(), "attempts"))
	t.Setenv(envChildTimes, "1000")
	require.NoError(t, rt.Start(context.Background()))
	waitFor(t, "waiting to retry", func() bool { return rt.Stats().BringUp.Phase == device.PhaseWaiting })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, rt.Shutdown(ctx))
	assert.Empty(t, childtest.Children(os.Getpid()), "no child left")
	waitFor(t, "failed", func() bool { return rt.Stats().State == lazy.Failed })
	assert.ErrorIs(t, rt.Stats().Err, device.ErrClosed)
	assert.Zero(t, c.Calls().Init, "nothing initialized in this process")
}

// stuckWatch is a sim whose health watch, once it has reported both devices
// watched, stays in a "driver call" that ignores its context until release
// is closed (an NVML wait on a dead GPU), then reports device 0 watched
// again.
type stuckWatch struct {
	*sim.Backend
	release chan struct{}
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
	site := fmt.Sprintf("lifecycle_test.go:%d", lineOfNext())
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

func (b *stuckWatch) WatchHealth(_ context.Context, report func(driver.HealthEvent)) error {
	for ordinal := range 2 {
		report(driver.HealthEvent{Ordinal: ordinal, Kind: driver.HealthWatching})
	}
	<-b.release
	report(driver.HealthEvent{Ordinal: 0, Kind: driver.HealthWatching})
	return nil
}

func (b *slowToStop) WatchHealth(ctx context.Context, _ func(driver.HealthEvent)) error {
	<-ctx.Done()
	time.Sleep(500 * time.Millisecond)
	b.returned.Store(true)
	return nil
}

func (b *slowToStop) Unwrap() driver.Backend { return b.Backend }
