package device_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device"
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
