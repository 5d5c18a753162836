//go:build linux && cgo && !nocuda

package cuda

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/internal/drawbuf"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withNVML adds the fake NVML to a fake host's environment.
func withNVML(t *testing.T, env []string) []string {
	t.Helper()
	return append(env, EnvNVMLLibrary+"="+fakedriver.Build(t, fakedriver.NVML))
}

func TestMemoryInfo(t *testing.T) {
	env, log := fake(t, fakedriver.CUDA)
	t.Run("through NVML, matched by UUID though NVML numbers the GPUs the other way", func(t *testing.T) {
		log.Reset(t)
		runChild(t, "TestChildMemoryThroughNVML", withNVML(t, env)...)
		assert.Empty(t, log.Lines(t, "cuDevicePrimaryCtxRetain"), "no context was created to read memory")
		assert.Empty(t, log.Lines(t, "cuMemAlloc"), "no memory was allocated")
	})
	t.Run("without NVML: only where the primary context is already active", func(t *testing.T) {
		log.Reset(t)
		runChild(t, "TestChildMemoryWithoutNVML", append(env, EnvNVMLLibrary+"=/nonexistent/libnvidia-ml.so.1")...)
		assert.Empty(t, log.Lines(t, "cuDevicePrimaryCtxRetain 1"), "device 1, which nothing used, got no context")
	})
}

func TestChildMemoryThroughNVML(t *testing.T) {
	child(t)
	r := device.New(process)
	ctx := context.Background()
	want := map[int]uint64{0: 140000000000, 1: 61203283968} // the fake NVML's figures, by CUDA ordinal
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			free, total, err := r.MemoryInfo(ctx, g%2)
			if assert.NoError(t, err) {
				assert.Equal(t, want[g%2], free, "device %d", g%2)
				assert.Equal(t, map[int]uint64{0: 150754820096, 1: 85899345920}[g%2], total)
			}
		})
	}
	wg.Wait()
	allocs := testing.AllocsPerRun(100, func() { _, _, _ = r.MemoryInfo(ctx, 0) })
	assert.Zero(t, allocs, "the steady path allocates nothing")
}

func TestChildMemoryWithoutNVML(t *testing.T) {
	child(t)
	r := device.New(process)
	ctx := context.Background()
	_, _, err := r.MemoryInfo(ctx, 0)
	require.ErrorIs(t, err, device.ErrNotSupported)
	assert.ErrorContains(t, err, "never creates one")
	// A server's engine makes device 0's primary context active: now the
	// driver can say, and nothing new is created to ask it.
	require.NoError(t, r.Do(ctx, 0, func() error { return nil }))
	free, total, err := r.MemoryInfo(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(150754820096), total)
	assert.Equal(t, uint64(150754820096-1<<30), free, "the fake driver's own figure")
	_, _, err = r.MemoryInfo(ctx, 1)
	assert.ErrorIs(t, err, device.ErrNotSupported)
}

func TestDoRestoresTheThreadsContext(t *testing.T) {
	env, log := fake(t, fakedriver.CUDA)
	log.Reset(t)
	runChild(t, "TestChildDo", env...)
	assert.Equal(t, []string{
		"cuCtxSetCurrent 1", "cuCtxSetCurrent 0", "cuCtxSetCurrent 1", "cuCtxSetCurrent -1", // Do(1) around Do(0)
		"cuCtxSetCurrent 0", "cuCtxSetCurrent -1", // Do(0) whose fn panicked
	}, log.Lines(t, "cuCtxSetCurrent"), "each Do sets its device's primary context, then puts back what the thread had")
	assert.Equal(t, []string{"cuDevicePrimaryCtxRetain 0"}, log.Lines(t, "cuDevicePrimaryCtxRetain 0"), "retained once per device")
}

func TestChildDo(t *testing.T) {
	child(t)
	r := device.New(process)
	ctx := context.Background()
	ran := 0
	require.NoError(t, r.Do(ctx, 1, func() error {
		ran++
		return r.Do(ctx, 0, func() error { ran++; return nil })
	}))
	assert.Equal(t, 2, ran)
	assert.PanicsWithValue(t, "engine exploded", func() {
		_ = r.Do(ctx, 0, func() error { panic("engine exploded") })
	})
	assert.ErrorIs(t, r.Do(ctx, 2, func() error { return nil }), device.ErrInvalidDevice)
}

func TestDriverFloor(t *testing.T) {
	env, log := fake(t, fakedriver.CUDA)
	t.Run("a driver older than the backend's floor", func(t *testing.T) {
		log.Reset(t)
		runChild(t, "TestChildDriverFloor", append(env, "GPUINIT_FAKE_CUDA_VERSION=10020", "WANT=CUDA 10.2 (10020), this backend needs CUDA 11.0 (11000)")...)
		assert.Empty(t, log.Lines(t, "cuInit"), "the version is checked before cuInit")
	})
	t.Run("a driver older than the server's engine needs", func(t *testing.T) {
		runChild(t, "TestChildDriverFloor", append(env, "RAISE=12060",
			"WANT=cuda: DriverVersion failed: the driver reports 12040, this runtime requires 12060", "HINT=upgrade the driver")...)
	})
	t.Run("a second runtime's floor, after the driver is initialized", func(t *testing.T) {
		runChild(t, "TestChildDriverFloor", append(env, "FIRST=1", "RAISE=12060",
			"WANT=cuda: DriverVersion failed: the driver reports 12040, this runtime requires 12060", "HINT=upgrade the driver")...)
	})
}

func TestChildDriverFloor(t *testing.T) {
	child(t)
	if os.Getenv("FIRST") != "" {
		require.NoError(t, device.New(process).Init(context.Background()))
	}
	r := device.New(process)
	if raise := os.Getenv("RAISE"); raise != "" {
		var v int
		_, err := fmt.Sscan(raise, &v)
		require.NoError(t, err)
		require.NoError(t, r.RequireDriverVersion("cuda", v))
	}
	err := r.Init(context.Background())
	require.ErrorIs(t, err, device.ErrDriverMismatch)
	assert.ErrorContains(t, err, os.Getenv("WANT"))
	hint := cmp.Or(os.Getenv("HINT"), "upgrade the NVIDIA driver")
	assert.ErrorContains(t, err, hint)
	assert.Error(t, r.RequireDriverVersion("cuda", 13000), "too late once initialized")
}

// TestFailureCatalogue reproduces, through the fake driver, the bring-up
// failures production hosts see, and checks that each says what to do.
func TestFailureCatalogue(t *testing.T) {
	env, _ := fake(t, fakedriver.CUDA)
	for _, tc := range []struct {
		name     string
		env      []string
		code     int
		sentinel string
		hint     string
	}{
		{"stub library (the toolkit's libcuda.so)", []string{"GPUINIT_FAKE_CUDA_STUB=1"}, 34, "not-found", "link stub"},
		{"driver older than needed", []string{"GPUINIT_FAKE_CUDA_INIT=35"}, 35, "mismatch", "upgrade the driver"},
		{"no device", []string{"GPUINIT_FAKE_CUDA_INIT=100"}, 100, "no-device", "CUDA_VISIBLE_DEVICES"},
		{"NVIDIA_VISIBLE_DEVICES=void", []string{"GPUINIT_FAKE_CUDA_DEVICES=0", "NVIDIA_VISIBLE_DEVICES=void"}, 100, "no-device", `NVIDIA_VISIBLE_DEVICES="void" hides every device`},
		{"CUDA_VISIBLE_DEVICES=-1", []string{"GPUINIT_FAKE_CUDA_DEVICES=0", "CUDA_VISIBLE_DEVICES=-1"}, 100, "no-device", `CUDA_VISIBLE_DEVICES="-1" hides every device`},
		{"fabric manager not running (HGX)", []string{"GPUINIT_FAKE_CUDA_INIT=802"}, 802, "no-device", "fabric manager"},
		{"user and kernel driver differ", []string{"GPUINIT_FAKE_CUDA_INIT=803"}, 803, "mismatch", "reboot after a driver upgrade"},
		{"forward compatibility on an unsupported GPU", []string{"GPUINIT_FAKE_CUDA_INIT=804"}, 804, "mismatch", "forward compatibility"},
		{"nvidia_uvm after suspend", []string{"GPUINIT_FAKE_CUDA_INIT=999"}, 999, "", "reload nvidia_uvm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			childEnv := append(append([]string{}, env...), tc.env...)
			childEnv = append(childEnv, fmt.Sprintf("WANT_CODE=%d", tc.code), "WANT_SENTINEL="+tc.sentinel, "WANT_HINT="+tc.hint)
			runChild(t, "TestChildCatalogue", childEnv...)
		})
	}
}

func TestChildCatalogue(t *testing.T) {
	child(t)
	err := device.New(process).Init(context.Background())
	var de *device.DriverError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, os.Getenv("WANT_CODE"), fmt.Sprint(de.Code))
	assert.Contains(t, de.Hint, os.Getenv("WANT_HINT"))
	sentinel := map[string]error{"not-found": device.ErrDriverNotFound, "mismatch": device.ErrDriverMismatch, "no-device": device.ErrNoDevice}
	if s := sentinel[os.Getenv("WANT_SENTINEL")]; s != nil {
		assert.ErrorIs(t, err, s)
	}
	if de.Code == 34 && !linked {
		assert.Contains(t, de.Message, "loaded "+os.Getenv(EnvLibrary), "the stub's path is named")
	}
	t.Logf("%v", err)
}

// TestGeneratorKeepsItsDeviceBuffer: Generate allocates device memory only
// when a draw needs more than it has, and Close frees it.
func TestGeneratorKeepsItsDeviceBuffer(t *testing.T) {
	env, log := fake(t, fakedriver.CUDA)
	log.Reset(t)
	runChild(t, "TestChildGeneratorBuffer", env...)
	assert.Equal(t, []string{"cuMemAlloc_v2 64", "cuMemFree_v2", "cuMemAlloc_v2 128", "cuMemFree_v2", fmt.Sprintf("cuMemAlloc_v2 %d", 4*drawbuf.MaxValues), "cuMemFree_v2"},
		log.Lines(t, "cuMemAlloc", "cuMemFree"),
		"16 values three times, then 8, then 32, then 2 buffers' worth and 8: one buffer, grown to its bound and no further, freed at Close")
	assert.Equal(t, []string{"cuDevicePrimaryCtxRetain 0"}, log.Lines(t, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease"),
		"two generators and a Do share one retain of the primary context, kept")
}

func TestChildGeneratorBuffer(t *testing.T) {
	child(t)
	require.NoError(t, process.Init(context.Background()))
	g, err := process.NewGenerator(0)
	require.NoError(t, err)
	require.NoError(t, g.SetSeed(42))
	var drawn []uint32
	for _, n := range []int{16, 16, 16, 8, 32, 2*drawbuf.MaxValues + 8} {
		buf := make([]uint32, n)
		require.NoError(t, g.Generate(buf))
		drawn = append(drawn, buf...)
	}
	want := make([]uint32, len(drawn))
	philox.FillCURAND(want, 42, 0)
	assert.Equal(t, want, drawn, "the reused buffer changes nothing drawn")
	require.NoError(t, g.Close())
	g, err = process.NewGenerator(0)
	require.NoError(t, err)
	require.NoError(t, g.Close())
	require.NoError(t, process.Do(0, func() error { return nil }))
}
