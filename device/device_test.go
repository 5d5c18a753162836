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
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingBackend is a test backend that records every call into it.
type countingBackend struct {
	calls   atomic.Int64
	initErr error
}

func (b *countingBackend) Name() string                { return "counting" }
func (b *countingBackend) Init(context.Context) error  { b.calls.Add(1); return b.initErr }
func (b *countingBackend) DriverVersion() (int, error) { b.calls.Add(1); return 1, nil }
func (b *countingBackend) Count() (int, error)         { b.calls.Add(1); return 1, nil }
func (b *countingBackend) Device(int) (device.Info, error) {
	b.calls.Add(1)
	return device.Info{Name: "x"}, nil
}

var registered = &countingBackend{}

func init() {
	device.Register("counting", func() (device.Backend, error) { return registered, nil })
}

func TestOpenAndLazyCallTouchNoBackend(t *testing.T) {
	r, err := device.Open("counting")
	require.NoError(t, err)
	again, err := device.Open("counting")
	require.NoError(t, err)
	assert.Same(t, r, again, "one Runtime per backend per process")
	require.NoError(t, r.LazyCall(context.Background(), func(context.Context) error { return nil }))
	assert.Zero(t, registered.calls.Load())
	assert.False(t, r.IsInitialized())

	s := sim.New()
	sr := device.New(s)
	require.NoError(t, sr.LazyCall(context.Background(), func(context.Context) error { return nil }))
	assert.Zero(t, s.Calls().Total())
	assert.Equal(t, lazy.Uninitialized, sr.State())
}

func TestInitCallsBackendOnceAndMemoizesFailure(t *testing.T) {
	s := sim.New(sim.WithFailure(sim.NoDevice))
	r := device.New(s)
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
	assert.Equal(t, int64(1), s.Calls().Init)
	assert.ErrorIs(t, r.LazyCall(ctx, func(context.Context) error { return nil }), device.ErrNoDevice)
}

func TestConcurrentFirstTouchInitializesOnce(t *testing.T) {
	s := sim.New(sim.WithDevices(3))
	r := device.New(s)
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
	c := s.Calls()
	assert.Equal(t, int64(1), c.Init)
	assert.Equal(t, int64(1), c.Count)
	assert.Equal(t, int64(3), c.Device, "device information is read once, at init")
}

func TestErrorsAreClearAndNothingHalfDone(t *testing.T) {
	ctx := context.Background()
	r := device.New(sim.New(sim.WithDevices(2)))
	for ordinal, want := range map[int]string{-1: "ordinals start at 0", 2: "valid ordinals are 0..1", 99: "valid ordinals are 0..1"} {
		_, err := r.Device(ctx, ordinal)
		assert.ErrorIs(t, err, device.ErrInvalidDevice)
		assert.Contains(t, err.Error(), want)
	}
	devices, err := r.Devices(ctx)
	require.NoError(t, err)
	devices[0].Name = "changed"
	d0, _ := r.Device(ctx, 0)
	assert.NotEqual(t, "changed", d0.Name, "Devices returns a copy")

	before := device.Backends()
	for _, tc := range []struct {
		name string
		fn   func()
		want string
	}{
		{"twice", func() { device.Register("counting", func() (device.Backend, error) { return nil, nil }) }, "registered twice"},
		{"nil opener", func() { device.Register("x", nil) }, "nil opener"},
		{"empty name", func() { device.Register("", func() (device.Backend, error) { return nil, nil }) }, "not a backend name"},
	} {
		t.Run("Register "+tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, panicMessage(tc.fn), tc.fn)
			assert.Contains(t, panicMessage(tc.fn), tc.want)
		})
	}
	assert.Equal(t, before, device.Backends(), "a refused Register leaves nothing behind")
	r2, err := device.Open("counting")
	require.NoError(t, err)
	assert.Same(t, registered, r2.Backend(), "the first registration stands")

	_, err = device.Open("nosuch")
	assert.ErrorContains(t, err, `unknown backend "nosuch"`)
	for _, name := range []string{"cuda", "hip"} {
		if !contains(device.Backends(), name) {
			_, err = device.Open(name)
			assert.ErrorIs(t, err, device.ErrNotCompiled)
			assert.ErrorContains(t, err, "-tags "+name)
		}
	}
}

func TestOpenReadsEnvironment(t *testing.T) {
	// The process's sim Runtime is left alone for ExampleOpen.
	t.Setenv(device.EnvBackend, " counting ")
	r, err := device.Open("")
	require.NoError(t, err)
	assert.Equal(t, "counting", r.Name())
	t.Setenv(device.EnvBackend, "")
	if !contains(device.Backends(), "cuda") && !contains(device.Backends(), "hip") {
		_, err = device.Open("")
		assert.ErrorIs(t, err, device.ErrNotCompiled, "empty means auto, and no GPU backend is in this binary")
	}
}

func TestAutoWithoutGPUBackendSaysWhichTags(t *testing.T) {
	if contains(device.Backends(), "cuda") || contains(device.Backends(), "hip") {
		t.Skip("a GPU backend is compiled in")
	}
	_, err := device.Open("auto")
	assert.ErrorIs(t, err, device.ErrNotCompiled)
	assert.ErrorContains(t, err, "-tags cuda or -tags hip")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func panicMessage(fn func()) (msg any) {
	defer func() { msg = recover() }()
	fn()
	return nil
}

// lineOfNext returns the line number after its caller's.
func lineOfNext() int {
	_, _, line, _ := runtime.Caller(1)
	return line + 1
}

func TestCodeTableNamesEveryCode(t *testing.T) {
	table := &device.CodeTable{Backend: "x", Unnamed: "xResult", Codes: map[int]device.Code{
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
}

func TestFailedOpenCachesNothing(t *testing.T) {
	var opens atomic.Int64
	device.Register("flaky", func() (device.Backend, error) {
		if opens.Add(1) == 1 {
			return nil, errors.New("bad configuration")
		}
		return &countingBackend{}, nil
	})
	_, err := device.Open("flaky")
	assert.ErrorContains(t, err, "opening backend flaky: bad configuration")
	r, err := device.Open("flaky")
	require.NoError(t, err, "a later Open tries again")
	again, err := device.Open("flaky")
	require.NoError(t, err)
	assert.Same(t, r, again)
	assert.Equal(t, int64(2), opens.Load(), "the opener runs until it succeeds, then never again")
}
