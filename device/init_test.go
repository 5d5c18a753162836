package device_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// layersTo is the shortest way down from err to a T, through device.Layer:
// the types met, err's first and the T's last. It is nil where none is.
func layersTo[T error](err error) []string {
	type step struct {
		err  error
		path []string
	}
	level := []step{{err, nil}}
	for len(level) > 0 {
		var next []step
		for _, s := range level {
			path := append(s.path[:len(s.path):len(s.path)], fmt.Sprintf("%T", s.err))
			if _, ok := s.err.(T); ok {
				return path
			}
			for _, e := range device.Layer(s.err) {
				next = append(next, step{e, path})
			}
		}
		level = next
	}
	return nil
}

// TestInitsErrorIsAtMostThreeLayersAboveTheDrivers: what Init returns
// reaches the driver's own error (the *DriverError, or the
// *PreflightError of a child that gave no answer) within three layers: the
// failure Init returns, auto's *NoBackendError, the backend's failure. The
// old tower took five: the Runtime's form of lazy's *InitError, the
// *InitError, the *NoBackendError, its As-only wrapper, the class's.
func TestInitsErrorIsAtMostThreeLayersAboveTheDrivers(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		layers func(t *testing.T) []string
	}{
		{"one backend that fails in this process", func(t *testing.T) []string {
			var g device.Registry
			registerGPU(&g, "cuda", 10, sim.WithFailure(sim.NoDevice))
			return layersTo[*device.DriverError](openIn(t, &g, "cuda").Init(ctx))
		}},
		{"a preflight child that hung, retried until RetryFor", func(t *testing.T) []string {
			rt, err := openSimWith(t, map[string]string{sim.EnvFail: string(sim.Hang)})
			require.NoError(t, err)
			t.Cleanup(func() { _ = rt.Shutdown(ctx) })
			require.NoError(t, rt.UsePreflight(device.Preflight{Command: []string{os.Args[0], "-test.run=^$"},
				Deadline: 100 * time.Millisecond, RetryFor: time.Nanosecond}))
			t.Setenv("GPUINIT_PREFLIGHT", "")
			err = rt.Init(ctx)
			require.ErrorContains(t, err, "still not ready after 1 preflight attempts")
			return layersTo[*device.PreflightError](err)
		}},
		{"auto, with both backends failed", func(t *testing.T) []string {
			var g device.Registry
			registerGPU(&g, "cuda", 10, sim.WithFailure(sim.NoDriver))
			registerGPU(&g, "hip", 20, sim.WithFailure(sim.NoDevice))
			return layersTo[*device.DriverError](openIn(t, &g, "auto").Init(ctx))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.layers(t)
			require.NotEmpty(t, path, "Init's error does not reach the driver's")
			t.Log(path)
			assert.LessOrEqual(t, len(path)-1, 3, "layers from Init's error to the driver's: %v", path)
		})
	}
}

// TestDriverFloorHoldsForEveryRuntime: a backend initializes once per
// process, so the floor a later Runtime sets never reaches a backend's Init;
// the Runtime checks it after Init itself.
func TestDriverFloorHoldsForEveryRuntime(t *testing.T) {
	for _, tc := range []struct {
		name      string
		floor     int
		firstInit bool // another Runtime initialized the shared backend first
		wantErr   bool
	}{
		{"a floor above the driver fails Init", sim.DriverVersion + 1, false, true},
		{"a floor above the driver fails a second runtime's Init", sim.DriverVersion + 1, true, true},
		{"a floor the driver meets passes", sim.DriverVersion, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := sim.New()
			if tc.firstInit {
				require.NoError(t, device.New(b).Init(context.Background()))
			}
			r := device.New(b)
			require.NoError(t, r.RequireDriverVersion("sim", tc.floor))
			err := r.Init(context.Background())
			if !tc.wantErr {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, device.ErrDriverMismatch)
			assert.ErrorContains(t, err, fmt.Sprintf("the driver reports %d, this runtime requires %d", sim.DriverVersion, tc.floor))
			assert.ErrorIs(t, r.Stats().Err, device.ErrDriverMismatch, "the failure is memoized")
		})
	}
}
