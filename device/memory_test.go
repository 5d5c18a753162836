package device_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// panickingMemory is a sim whose memory reads panic, and counts them.
type panickingMemory struct {
	*sim.Backend
	mu    sync.Mutex
	reads int
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
