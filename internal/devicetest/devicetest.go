// Package devicetest holds the checks that every real backend's tests share: a
// backend wrapper that counts the driver's init calls, and the no-device
// contract (the failure is mapped, memoized, calls the driver once, and reports
// queued work as never run).
package devicetest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Counting wraps a Backend and counts the calls of its Init.
type Counting struct {
	device.Backend
	inits atomic.Int64
}

// Init counts, then calls the wrapped backend's Init.
func (c *Counting) Init(ctx context.Context) error {
	c.inits.Add(1)
	return c.Backend.Init(ctx)
}

// Inits reports how many times Init was called.
func (c *Counting) Inits() int64 { return c.inits.Load() }

// SkipWithoutDevice skips the test, with the driver's answer as the reason,
// when b's Init reports that there is no device.
func SkipWithoutDevice(t *testing.T, b device.Backend) {
	t.Helper()
	if err := b.Init(context.Background()); errors.Is(err, device.ErrNoDevice) {
		t.Skip("no device here:", err)
	}
}

// CheckNoDeviceMemoized asserts the no-device contract through a Runtime over
// b: a queued call, then three queries that each fail with ErrNoDevice and a
// *device.DriverError (which check inspects further), the queued call reported
// as never run, and the driver's init called once. It skips where b finds a
// device, since the path cannot be shown there.
func CheckNoDeviceMemoized(t *testing.T, b device.Backend, check func(t *testing.T, de *device.DriverError)) {
	t.Helper()
	ctx := context.Background()
	if err := b.Init(ctx); err == nil {
		t.Skip("this machine has a device; the no-device path cannot be shown")
	}
	counting := &Counting{Backend: b}
	r := device.New(counting)
	require.NoError(t, r.LazyCall(ctx, func(context.Context) error { t.Error("queued call ran"); return nil }))
	for range 3 {
		_, err := r.DeviceCount(ctx)
		require.ErrorIs(t, err, device.ErrNoDevice)
		var de *device.DriverError
		require.ErrorAs(t, err, &de)
		assert.NotEmpty(t, de.Hint, "the error says what to check")
		check(t, de)
		var ie *lazy.InitError
		require.ErrorAs(t, err, &ie)
		assert.Len(t, ie.NotRun, 1, "the queued call is reported as never run")
	}
	assert.Equal(t, int64(1), counting.Inits(), "the driver's init is called once")
}
