package device_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSimMeetsTheBackendContract(t *testing.T) {
	t.Run("with devices", func(t *testing.T) { devicetest.TestBackend(t, sim.New(), devicetest.GeneratorsDraw(philox.FillCURAND)) })
	for _, f := range []sim.Failure{sim.NoDevice, sim.NoDriver, sim.DriverMismatch, sim.Unknown} {
		t.Run(string(f), func(t *testing.T) { devicetest.TestBackend(t, sim.New(sim.WithFailure(f))) })
	}
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
	site := fmt.Sprintf("device_test.go:%d", lineOfNext())
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

func TestBadOrdinalsAreRefusedWithTheRange(t *testing.T) {
	ctx := context.Background()
	r := device.New(sim.New(sim.WithDevices(2)))
	assert.ErrorContains(t, r.CheckDevice(0), "not initialized", "before init the range is unknown")
	for ordinal, want := range map[int]string{-1: "ordinals start at 0", 2: "valid ordinals are 0..1", 99: "valid ordinals are 0..1"} {
		_, err := r.Device(ctx, ordinal)
		assert.ErrorIs(t, err, device.ErrInvalidDevice)
		assert.ErrorContains(t, err, want)
	}
}

func TestDevicesReturnsACopy(t *testing.T) {
	ctx := context.Background()
	r := device.New(sim.New())
	devices, err := r.Devices(ctx)
	require.NoError(t, err)
	devices[0].Name = "changed"
	d0, err := r.Device(ctx, 0)
	require.NoError(t, err)
	assert.NotEqual(t, "changed", d0.Name)
}

func TestCodeTableNamesEveryCode(t *testing.T) {
	table := &driver.CodeTable{Backend: "x", Unnamed: "xResult", Codes: map[int]driver.Code{
		7: {Name: "X_NO_DEVICE", Sentinel: device.ErrNoDevice, Hint: "plug one in"},
	}}
	for _, tc := range []struct {
		code       int
		driverName string
		wantName   string
		wantIs     bool
	}{
		{7, "", "X_NO_DEVICE", true},                  // the table names it
		{7, "xErrorNoDevice", "xErrorNoDevice", true}, // the driver's own name wins
		{8, "", "xResult", false},                     // nobody names it
	} {
		e := table.Error("xInit", tc.code, tc.driverName, "msg")
		assert.Equal(t, tc.wantName, e.Name)
		assert.Equal(t, tc.wantIs, errors.Is(e, device.ErrNoDevice))
		assert.Equal(t, "x", e.Backend)
		assert.Equal(t, "xInit", e.Op)
		assert.Equal(t, tc.code, e.Code)
		if tc.wantIs {
			assert.Equal(t, "x: xInit failed: "+tc.wantName+" (7): msg; plug one in", e.Error())
		} else {
			assert.Empty(t, e.Hint)
		}
	}
	loader := &device.DriverError{Backend: "cuda", Op: "dlopen", Message: "libcuda.so.1: cannot open shared object file", Hint: "install it"}
	assert.Equal(t, "cuda: dlopen failed: libcuda.so.1: cannot open shared object file; install it", loader.Error(),
		"a loader failure has no code to print")
}

// lineOfNext returns the line number after its caller's.
func lineOfNext() int {
	_, _, line, _ := runtime.Caller(1)
	return line + 1
}

func TestStickyErrorsLoseTheDeviceOthersAreCounted(t *testing.T) {
	ctx := context.Background()
	s := sim.New()
	r := device.New(s)
	require.NoError(t, r.Init(ctx))
	assert.False(t, (len(r.Stats().Lost) > 0))
	assert.NoError(t, r.ReportError(0, errors.New("a timeout of the engine's own")), "not a driver error: counted")
	de, err := r.ReportDriverCode(0, "cuMemcpyHtoD_v2", 1)
	assert.NoError(t, err)
	assert.False(t, de.Sticky)
	assert.False(t, (len(r.Stats().Lost) > 0))
	assert.Equal(t, map[int]int64{0: 2}, r.Stats().ErrorCounts)
	de, err = r.ReportDriverCode(0, "cuMemcpyHtoD_v2", 0)
	assert.Nil(t, de, "code 0 is success")
	assert.NoError(t, err)
	assert.Equal(t, map[int]int64{0: 2}, r.Stats().ErrorCounts, "and records nothing")

	s.LoseDevice(1, 700)
	doErr := r.Do(ctx, 1, func() error { return nil })
	require.Error(t, doErr)
	assert.ErrorIs(t, r.ReportError(1, doErr), device.ErrDeviceLost, "700 is sticky: device 1 is lost")
	assert.ErrorIs(t, r.ReportError(1, nil), device.ErrDeviceLost, "and stays lost")
	assert.NoError(t, r.ReportError(0, nil), "device 0 is not")
	de, err = r.ReportDriverCode(0, "cuLaunchKernel", 719)
	assert.True(t, de.Sticky)
	assert.Equal(t, "CUDA_ERROR_LAUNCH_FAILED", de.Name)
	var lostErr device.LostDevice
	require.ErrorAs(t, err, &lostErr)
	assert.Equal(t, 0, lostErr.Ordinal)
	lost := r.Stats().Lost
	require.Len(t, lost, 2)
	assert.Equal(t, 0, lost[0].Ordinal)
	assert.Equal(t, 719, lost[0].Err.Code)
	assert.Equal(t, 700, lost[1].Err.Code)
	assert.ErrorIs(t, lost[1], device.ErrDeviceLost)
	assert.Contains(t, lost[1].Error(), "device 1 lost")
}

func TestNoBackendErrorMatchesOneSummary(t *testing.T) {
	notCompiled := fmt.Errorf("%w: built without cgo", device.ErrNotCompiled)
	notFound := &device.DriverError{Backend: "x", Op: "dlopen", Sentinel: device.ErrDriverNotFound}
	noDevice := &device.DriverError{Backend: "x", Op: "cuInit", Code: 100, Sentinel: device.ErrNoDevice}
	mismatch := &device.DriverError{Backend: "x", Op: "cuInit", Code: 803, Sentinel: device.ErrDriverMismatch}
	for _, tc := range []struct {
		name  string
		tried []error
		want  error
	}{
		{"nothing compiled in", []error{notCompiled, notCompiled}, device.ErrNotCompiled},
		{"no library loaded", []error{notFound, notCompiled}, device.ErrDriverNotFound},
		{"a driver loaded, no device", []error{notFound, noDevice}, device.ErrNoDevice},
		{"a driver that differs from the kernel's, the other missing: the lead's kind", []error{mismatch, notFound}, device.ErrDriverMismatch},
		{"no library, then a driver that answered: the answer's kind", []error{notFound, mismatch}, device.ErrDriverMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &device.NoBackendError{}
			for i, err := range tc.tried {
				e.Tried = append(e.Tried, device.BackendFailure{Backend: fmt.Sprint(i), Err: err})
			}
			for _, s := range []error{device.ErrNotCompiled, device.ErrDriverNotFound, device.ErrNoDevice, device.ErrDriverMismatch} {
				assert.Equal(t, s == tc.want, errors.Is(e, s), "errors.Is(%v)", s)
			}
			var de *device.DriverError
			assert.Equal(t, tc.want != device.ErrNotCompiled, errors.As(e, &de), "each backend's DriverError is reachable by errors.As")
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

// TestOptionalInterfacesAreFoundThroughAWrapper: a Runtime over a wrapper
// (devicetest.Counting here) reaches what the wrapped backend offers, and a
// backend without a capability gets ErrNotSupported.
func TestOptionalInterfacesAreFoundThroughAWrapper(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend driver.Backend
		capable bool
	}{
		{"sim", sim.New(), true},
		{"sim under Counting", &devicetest.Counting{Backend: sim.New()}, true},
		{"sim under two wrappers", &devicetest.Counting{Backend: &devicetest.Counting{Backend: sim.New()}}, true},
		{"only the Backend methods", coreOnly{sim.New()}, false},
		{"only the Backend methods, under Counting", &devicetest.Counting{Backend: coreOnly{sim.New()}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := device.New(tc.backend)
			m, memErr := r.Memory(ctx, 0)
			total := m.Total
			ran := false
			doErr := r.Do(ctx, 0, func() error { ran = true; return nil })
			classified, _ := r.ReportDriverCode(1, "cuLaunchKernel", 700)
			if !tc.capable {
				assert.ErrorIs(t, memErr, device.ErrNotSupported)
				assert.ErrorIs(t, doErr, device.ErrNotSupported)
				assert.False(t, ran)
				assert.Equal(t, "unclassified", classified.Name)
				assert.False(t, (len(r.Stats().Lost) > 0))
				return
			}
			require.NoError(t, memErr)
			assert.NotZero(t, total)
			require.NoError(t, doErr)
			assert.True(t, ran)
			assert.Equal(t, "CUDA_ERROR_ILLEGAL_ADDRESS", classified.Name)
			assert.True(t, (len(r.Stats().Lost) > 0), "a sticky code loses the device")
		})
	}
}

// coreOnly hides every optional interface of the Backend it holds.
type coreOnly struct{ b driver.Backend }

func (c coreOnly) Name() string                            { return c.b.Name() }
func (c coreOnly) Init(ctx context.Context) error          { return c.b.Init(ctx) }
func (c coreOnly) DriverVersion() (int, error)             { return c.b.DriverVersion() }
func (c coreOnly) Count() (int, error)                     { return c.b.Count() }
func (c coreOnly) Device(ordinal int) (device.Info, error) { return c.b.Device(ordinal) }

func TestVisibilityReportsTheSettingsAtInit(t *testing.T) {
	t.Setenv("CUDA_VISIBLE_DEVICES", "1,0")
	t.Setenv("HIP_VISIBLE_DEVICES", "")
	r := device.New(sim.New())
	assert.Nil(t, r.Stats().Visibility, "nothing before Init")
	require.NoError(t, r.Init(context.Background()))
	t.Setenv("CUDA_VISIBLE_DEVICES", "0")
	v := r.Stats().Visibility
	assert.Equal(t, "1,0", v["CUDA_VISIBLE_DEVICES"], "the value when the Runtime initialized")
	value, set := v["HIP_VISIBLE_DEVICES"]
	assert.True(t, set, "an empty value is reported: it hides every device")
	assert.Empty(t, value)
}
