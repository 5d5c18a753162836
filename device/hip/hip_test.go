//go:build hip && cgo

package hip

import (
	"context"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/internal/devicetest"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
	devicetest.CheckNoDeviceMemoized(t, &Backend{}, func(t *testing.T, de *device.DriverError) {
		assert.Contains(t, []int{100, 101}, de.Code, "ROCm 5.2 answers 101, later versions 100")
		assert.Contains(t, []string{"hipErrorNoDevice", "hipErrorInvalidDevice"}, de.Name)
		assert.Contains(t, de.Error(), "/dev/kfd")
	})
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
	devicetest.SkipWithoutDevice(t, &Backend{})
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
