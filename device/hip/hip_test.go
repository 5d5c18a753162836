//go:build hip && cgo

package hip

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type countingBackend struct {
	*Backend
	inits atomic.Int64
}

func (c *countingBackend) Init(ctx context.Context) error {
	c.inits.Add(1)
	return c.Backend.Init(ctx)
}

func hasDevice(t *testing.T) {
	if err := (&Backend{}).Init(context.Background()); errors.Is(err, device.ErrNoDevice) {
		t.Skip("no HIP device here:", err)
	}
}

func TestVersionsBeforeInit(t *testing.T) {
	b := &Backend{}
	v, err := b.DriverVersion()
	require.NoError(t, err)
	assert.Positive(t, v)
	rv, err := b.RuntimeVersion()
	require.NoError(t, err)
	assert.Positive(t, rv)
	t.Logf("hipDriverGetVersion %d, hipRuntimeGetVersion %d", v, rv)
}

func TestNoDeviceIsReportedAndMemoized(t *testing.T) {
	b := &countingBackend{Backend: &Backend{}}
	r := device.New(b)
	ctx := context.Background()
	require.NoError(t, r.LazyCall(ctx, func(context.Context) error { t.Error("queued call ran"); return nil }))
	if err := b.Backend.Init(ctx); err == nil {
		t.Skip("this machine has a HIP device; the no-device path cannot be shown")
	}
	b.inits.Store(0)
	for range 3 {
		_, err := r.DeviceCount(ctx)
		require.ErrorIs(t, err, device.ErrNoDevice)
		var de *device.DriverError
		require.ErrorAs(t, err, &de)
		assert.Contains(t, []int{100, 101}, de.Code)
		assert.Contains(t, []string{"hipErrorNoDevice", "hipErrorInvalidDevice"}, de.Name)
		assert.Contains(t, err.Error(), "/dev/kfd")
		var ie *lazy.InitError
		require.ErrorAs(t, err, &ie)
		assert.Len(t, ie.NotRun, 1)
	}
	assert.Equal(t, int64(1), b.inits.Load(), "hipInit is called once")
}

func TestGeneratorCreatesButCannotGenerateWithoutDevice(t *testing.T) {
	b := &Backend{}
	if b.Init(context.Background()) == nil {
		t.Skip("this machine has a HIP device")
	}
	g, err := b.NewGenerator(0)
	require.NoError(t, err, "creating a generator needs no GPU")
	defer g.Close()
	require.NoError(t, g.SetSeed(42))
	require.NoError(t, g.SetOffset(4))
	err = g.Generate(make([]uint32, 8))
	var de *device.DriverError
	require.ErrorAs(t, err, &de, "a mapped error, not a crash")
	assert.Equal(t, "hip", de.Backend)
	t.Logf("Generate without a GPU: %v", err)
}

func TestDeviceQueriesAndGenerator(t *testing.T) {
	hasDevice(t)
	r := device.New(&Backend{})
	devices, err := r.Devices(context.Background())
	require.NoError(t, err)
	for _, d := range devices {
		assert.Regexp(t, `^gfx[0-9a-f]+$`, d.Arch)
	}
	g, err := (&Backend{}).NewGenerator(0)
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, g.SetSeed(42))
	got := make([]uint32, 1024)
	require.NoError(t, g.Generate(got))
	want := make([]uint32, len(got))
	philox.FillSequential(want, 42, 0)
	assert.Equal(t, want, got, "rocRAND's ordering is one sequential stream")
}
