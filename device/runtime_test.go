package device_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/lazy"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
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

// TestANilContextPanicsNamingTheMethod is the one rule for nil contexts, for
// every method of a Runtime that takes one, before and after init.
func TestANilContextPanicsNamingTheMethod(t *testing.T) {
	var nilCtx context.Context
	calls := map[string]func(r *device.Runtime){
		"Init":          func(r *device.Runtime) { _ = r.Init(nilCtx) },
		"Start":         func(r *device.Runtime) { _ = r.Start(nilCtx) },
		"LazyCall":      func(r *device.Runtime) { _ = r.LazyCall(nilCtx, func(context.Context) error { return nil }) },
		"LazyCallDepth": func(r *device.Runtime) { _ = r.LazyCallDepth(nilCtx, 0, func(context.Context) error { return nil }) },
		"DeviceCount":   func(r *device.Runtime) { _, _ = r.DeviceCount(nilCtx) },
		"Device":        func(r *device.Runtime) { _, _ = r.Device(nilCtx, 0) },
		"Devices":       func(r *device.Runtime) { _, _ = r.Devices(nilCtx) },

		"Memory":       func(r *device.Runtime) { _, _ = r.Memory(nilCtx, 0) },
		"Do":           func(r *device.Runtime) { _ = r.Do(nilCtx, 0, func() error { return nil }) },
		"NewGenerator": func(r *device.Runtime) { _, _ = r.NewGenerator(nilCtx, 0) },
		"Canary":       func(r *device.Runtime) { _ = r.Canary(nilCtx, 0) },
		"DeviceMap":    func(r *device.Runtime) { _, _ = r.DeviceMap(nilCtx) },
		"Inventory":    func(r *device.Runtime) { _, _, _ = device.Inventory(nilCtx, r) },
	}
	for _, initialized := range []bool{false, true} {
		for method, call := range calls {
			t.Run(map[bool]string{false: "before init/", true: "after init/"}[initialized]+method, func(t *testing.T) {
				r := device.New(sim.New())
				defer r.Shutdown(context.Background())
				if initialized {
					_ = r.Init(context.Background())
				}
				assert.PanicsWithValue(t, "device: "+method+" called with a nil Context", func() { call(r) })
			})
		}
	}
}

func (c coreOnly) Name() string                            { return c.b.Name() }
func (c coreOnly) Init(ctx context.Context) error          { return c.b.Init(ctx) }
func (c coreOnly) DriverVersion() (int, error)             { return c.b.DriverVersion() }
func (c coreOnly) Count() (int, error)                     { return c.b.Count() }
func (c coreOnly) Device(ordinal int) (device.Info, error) { return c.b.Device(ordinal) }

// recorder is a slog.Handler that keeps the records it handles.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *recorder) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h *recorder) WithGroup(string) slog.Handler { return h }

func (h *recorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

func (h *recorder) all() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]slog.Record(nil), h.records...)
}

// TestTheWatchdogWarnsThroughTheLoggerTheServerGives: an initialization
// past lazy's watchdog warns through the logger given to New or Open, or to
// a later Open of the same Runtime, in one record whose stacks are one
// attribute. The sim's init takes longer than the watchdog on synctest's
// clock, so no test waits 30 real seconds.
func TestTheWatchdogWarnsThroughTheLoggerTheServerGives(t *testing.T) {
	inRegistry := func(b driver.Backend) *device.Registry {
		g := &device.Registry{}
		g.Register(driver.Registration{Name: "sim", Open: func() (driver.Backend, error) { return b, nil }})
		return g
	}
	cases := []struct {
		name string
		open func(t *testing.T, b driver.Backend, l *slog.Logger) *device.Runtime
	}{
		{"New's", func(_ *testing.T, b driver.Backend, l *slog.Logger) *device.Runtime {
			return device.New(b, device.WithLogger(l))
		}},
		{"Open's", func(t *testing.T, b driver.Backend, l *slog.Logger) *device.Runtime {
			rt, err := inRegistry(b).Open("sim", device.WithLogger(l))
			require.NoError(t, err)
			return rt
		}},
		{"a later Open's, on the Runtime a first Open made", func(t *testing.T, b driver.Backend, l *slog.Logger) *device.Runtime {
			g := inRegistry(b)
			first, err := g.Open("sim")
			require.NoError(t, err)
			rt, err := g.Open("sim", device.WithLogger(l))
			require.NoError(t, err)
			require.Same(t, first, rt)
			return rt
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{}
				b := sim.New(sim.WithInitDelay(lazy.DefaultWatchdog + time.Second))
				rt := c.open(t, b, slog.New(rec))
				ctx := context.Background()
				require.NoError(t, rt.Init(ctx))
				require.NoError(t, rt.Shutdown(ctx))

				records := rec.all()
				require.Len(t, records, 1, "one warning, through the logger given")
				r := records[0]
				assert.Equal(t, slog.LevelWarn, r.Level)
				assert.Contains(t, r.Message, "lazy: slow initialization")
				attrs := map[string]string{}
				r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
				assert.Equal(t, "init", attrs["phase"])
				assert.Contains(t, attrs[lazy.StacksKey], "goroutine ")
			})
		})
	}
}

// TestAQueuedCallsFailureIsLoggedWithItsSite: a call queued before
// initialization whose failure no caller was told of is logged through the
// Runtime's logger, with the site that queued it and its error.
func TestAQueuedCallsFailureIsLoggedWithItsSite(t *testing.T) {
	rec := &recorder{}
	rt := device.New(sim.New(), device.WithLogger(slog.New(rec)))
	ctx := context.Background()
	bad := errors.New("ordinal 5 of 2")
	require.NoError(t, rt.LazyCall(ctx, func(context.Context) error { return bad }))
	require.NoError(t, rt.Init(ctx))
	records := rec.all()
	require.Len(t, records, 1)
	assert.Equal(t, slog.LevelWarn, records[0].Level)
	attrs := map[string]string{}
	records[0].Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	assert.Contains(t, attrs["site"], "runtime_test.go:", "the site that queued it")
	assert.Contains(t, attrs["site"], "TestAQueuedCallsFailureIsLoggedWithItsSite")
	assert.Equal(t, bad.Error(), attrs["err"])
	assert.Equal(t, "sim", attrs["backend"])
}
