package device_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/gpuinit/gpuinit/rng"
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

func (b *stuckWatch) WatchHealth(_ context.Context, report func(healthwatch.Event)) error {
	for ordinal := range 2 {
		report(healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindWatching})
	}
	<-b.release
	report(healthwatch.Event{Ordinal: 0, Kind: healthwatch.KindWatching})
	return nil
}

func (b *slowToStop) WatchHealth(ctx context.Context, _ func(healthwatch.Event)) error {
	<-ctx.Done()
	time.Sleep(500 * time.Millisecond)
	b.returned.Store(true)
	return nil
}

func (b *slowToStop) Unwrap() driver.Backend { return b.Backend }

// hungInit is a sim whose driver's init in this process does not return,
// deaf to its context, until release is closed.
type hungInit struct {
	*sim.Backend
	release chan struct{}
}

func (b *hungInit) Init(ctx context.Context) error {
	<-b.release
	return b.Backend.Init(ctx)
}

func (b *hungInit) Unwrap() driver.Backend { return b.Backend }

// stuckGenerators is a sim whose generators' Close does not return, deaf
// to everything, until release is closed: a curandDestroyGenerator on a GPU
// that stopped answering while idle.
type stuckGenerators struct {
	*sim.Backend
	release chan struct{}
}

func (b *stuckGenerators) NewGenerator(ordinal int) (driver.Generator, error) {
	g, err := b.Backend.NewGenerator(ordinal)
	return stuckClose{g, b.release}, err
}

func (b *stuckGenerators) Unwrap() driver.Backend { return b.Backend }

type stuckClose struct {
	driver.Generator
	release chan struct{}
}

func (g stuckClose) Close() error { <-g.release; return g.Generator.Close() }

// TestShutdownAbandonsWhatOutlastsItsContext: Shutdown under a 200 ms ctx
// returns when ctx ends, whatever holds it: a shutdown function (rng's
// Close of a generator stuck in the driver), or a driver's init hung in
// this process. Its error names what it abandoned and wraps ctx's error.
func TestShutdownAbandonsWhatOutlastsItsContext(t *testing.T) {
	for _, tc := range []struct {
		name      string
		start     func(t *testing.T, release chan struct{}) *device.Runtime
		abandoned []string
	}{
		{"a generator's Close stuck in the driver", func(t *testing.T, release chan struct{}) *device.Runtime {
			rt := device.New(&stuckGenerators{Backend: sim.New(), release: release})
			gens := rng.New(rt)
			require.NoError(t, gens.Generate(context.Background(), 0, make([]uint32, 4)))
			return rt
		}, []string{"the shutdown function registered by rng.New", "1 driver call(s) in flight"}},
		{"an initialization hung in the driver's init", func(t *testing.T, release chan struct{}) *device.Runtime {
			rt := device.New(&hungInit{Backend: sim.New(), release: release})
			require.NoError(t, rt.Start(context.Background()))
			return rt
		}, []string{"the initialization, in the sim driver's init"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				rt := tc.start(t, release)
				synctest.Wait()
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				start := time.Now()
				err := rt.Shutdown(ctx)
				assert.Equal(t, 200*time.Millisecond, time.Since(start), "by its ctx, on the bubble's clock")
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				for _, what := range tc.abandoned {
					assert.ErrorContains(t, err, what)
				}
				close(release)
				synctest.Wait()
				assert.ErrorIs(t, rt.Init(context.Background()), device.ErrClosed)
			})
		})
	}
}

// trackedHang is a sim whose health watch, once it has reported both
// devices watched, makes a tracked driver call that never returns, deaf to
// its context, until release is closed: an NVML event wait on a GPU that
// stopped answering.
type trackedHang struct {
	*sim.Backend
	release chan struct{}
}

func (b *trackedHang) WatchHealth(ctx context.Context, report func(healthwatch.Event)) error {
	for ordinal := range 2 {
		report(healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindWatching})
	}
	end := healthwatch.TrackCall(ctx, -1, "nvmlEventSetWait_v2")
	<-b.release
	end()
	return nil
}

func (b *trackedHang) Unwrap() driver.Backend { return b.Backend }

// TestShutdownAbandonsWhatIsKnownHungAtOnce: a call whose device was lost
// as hung, and a health watch whose driver call is past its deadline, are
// abandoned at once, even under a ctx of an hour, and the error wraps
// ErrDeviceHung, not ctx's error. A watch call that goes past its deadline
// while Shutdown waits is abandoned then.
func TestShutdownAbandonsWhatIsKnownHungAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		hang      func(t *testing.T, release chan struct{}) *device.Runtime
		shutAt    time.Duration // from the hang
		returnsAt time.Duration // from the hang
		abandoned string
	}{
		{"a call on a device lost as hung", func(t *testing.T, release chan struct{}) *device.Runtime {
			rt := device.New(sim.New())
			rt.SetCallDeadline(time.Second)
			require.NoError(t, rt.Init(context.Background()))
			go func() { _ = rt.Do(context.Background(), 1, func() error { <-release; return nil }) }()
			return rt
		}, 2 * time.Second, 2 * time.Second, "1 call(s) on device 1, lost as hung"},
		{"a health watch past its deadline", func(t *testing.T, release chan struct{}) *device.Runtime {
			rt := device.New(&trackedHang{Backend: sim.New(), release: release})
			rt.SetCallDeadline(time.Second)
			require.NoError(t, rt.Init(context.Background()))
			return rt
		}, 2 * time.Second, 2 * time.Second, "the health watch, hung in nvmlEventSetWait_v2"},
		{"a health watch that goes past its deadline while Shutdown waits", func(t *testing.T, release chan struct{}) *device.Runtime {
			rt := device.New(&trackedHang{Backend: sim.New(), release: release})
			rt.SetCallDeadline(time.Second)
			require.NoError(t, rt.Init(context.Background()))
			return rt
		}, 500 * time.Millisecond, time.Second, "the health watch, hung in nvmlEventSetWait_v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				start := time.Now()
				rt := tc.hang(t, release)
				time.Sleep(tc.shutAt)
				synctest.Wait()
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				err := rt.Shutdown(ctx)
				assert.Equal(t, tc.returnsAt, time.Since(start).Round(time.Millisecond), "not waited for past what made it known hung")
				assert.ErrorIs(t, err, driver.ErrDeviceHung)
				assert.NotErrorIs(t, err, context.DeadlineExceeded)
				assert.ErrorContains(t, err, tc.abandoned)
				close(release)
				synctest.Wait()
			})
		})
	}
}

// TestAnInitializationShutdownEndedIsClosed: a backend whose Init honours
// its ctx returns ctx's error when Shutdown ends it. The initialization is
// ErrClosed with no class, not a "context canceled" an operator must fix.
func TestAnInitializationShutdownEndedIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := device.New(sim.New(sim.WithInitDelay(time.Hour)))
		require.NoError(t, rt.Start(context.Background()))
		synctest.Wait()
		require.NoError(t, rt.Shutdown(context.Background()), "the init returned at its ctx's end: nothing abandoned")
		synctest.Wait()
		st := rt.Stats()
		require.Equal(t, lazy.Failed, st.State)
		assert.ErrorIs(t, st.Err, device.ErrClosed)
		assert.NotErrorIs(t, st.Err, context.Canceled)
		assert.Equal(t, device.ClassNone, device.ClassOf(st.Err))
	})
}

// TestAfterShutdownCheckDeviceIsClosedFirst: an ordinal out of range, a
// lost device and a device in service all get ErrClosed after Shutdown,
// never a bad-ordinal or lost error first.
func TestAfterShutdownCheckDeviceIsClosedFirst(t *testing.T) {
	rt := device.New(sim.New())
	ctx := context.Background()
	require.NoError(t, rt.Init(ctx))
	lost := rt.ReportError(1, &device.DriverError{Backend: "sim", Code: 719, Sticky: true})
	require.ErrorIs(t, lost, device.ErrDeviceLost)
	require.NoError(t, rt.Shutdown(ctx))
	for _, ordinal := range []int{-1, 0, 1, 99} {
		err := rt.CheckDevice(ordinal)
		assert.ErrorIs(t, err, device.ErrClosed, "ordinal %d", ordinal)
		assert.NotErrorIs(t, err, device.ErrInvalidDevice, "ordinal %d", ordinal)
		assert.NotErrorIs(t, err, device.ErrDeviceLost, "ordinal %d", ordinal)
	}
	assert.Len(t, rt.Stats().Devices, 2, "Stats still lists the devices it knew")
}

// TestAShutdownFunctionsErrorIsShutdownsAndItRunsBesideTheOthers: two
// functions registered with RegisterOnShutdown run at once, and each one's
// error is joined into Shutdown's.
func TestAShutdownFunctionsErrorIsShutdownsAndItRunsBesideTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := device.New(sim.New())
		first, second := errors.New("first"), errors.New("second")
		var running atomic.Int32
		for _, err := range []error{first, second} {
			rt.RegisterOnShutdown(func(context.Context) error {
				running.Add(1)
				time.Sleep(time.Second)
				assert.Equal(t, int32(2), running.Load(), "both run at once")
				return err
			})
		}
		start := time.Now()
		err := rt.Shutdown(context.Background())
		assert.Equal(t, time.Second, time.Since(start), "side by side: one second, not two")
		assert.ErrorIs(t, err, first)
		assert.ErrorIs(t, err, second)
	})
}

// TestAClosedRuntimeIsNeverGivenANameAgain: auto's successful init gives
// its Runtime the chosen backend's name. Where Shutdown ran meanwhile, the
// Runtime is not added back, and Open of the name makes a fresh one.
func TestAClosedRuntimeIsNeverGivenANameAgain(t *testing.T) {
	var g device.Registry
	g.Register(simRegistration(newSim))
	rt := openIn(t, &g, "sim")
	require.NoError(t, rt.Shutdown(context.Background()))
	device.AddRuntime(&g, "sim", rt) // as auto's init, finishing as Shutdown ran

	fresh := openIn(t, &g, "sim")
	assert.NotSame(t, rt, fresh)
	assert.NoError(t, fresh.Init(context.Background()))
}
