package device_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a slog.Handler that keeps the records it handles.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *recorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recorder) WithGroup(string) slog.Handler            { return h }
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
	assert.Contains(t, attrs["site"], "logger_test.go:", "the site that queued it")
	assert.Contains(t, attrs["site"], "TestAQueuedCallsFailureIsLoggedWithItsSite")
	assert.Equal(t, bad.Error(), attrs["err"])
	assert.Equal(t, "sim", attrs["backend"])
}
