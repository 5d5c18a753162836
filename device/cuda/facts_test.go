//go:build linux && cgo && !nocuda

package cuda

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/host"
	"github.com/gpuinit/gpuinit/device/internal/loader"
	"github.com/gpuinit/gpuinit/internal/childtest"
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

// fakeMeminfo is a host's /proc with 128 GiB of RAM, 96 GiB available and
// 1 GiB free (the rest page cache), and the environment that points at it.
func fakeMeminfo(t *testing.T) string {
	t.Helper()
	proc := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(proc, "meminfo"),
		[]byte("MemTotal:       134217728 kB\nMemFree:         1048576 kB\nMemAvailable:   100663296 kB\nCached:         99000000 kB\n"), 0o644))
	return host.EnvProcRoot + "=" + proc
}

// The fake host's meminfo figures, in bytes.
const (
	hostAvailable = 100663296 << 10
	hostTotal     = 134217728 << 10
)

func TestMemoryInfo(t *testing.T) {
	t.Parallel() // its children have files of their own (its subtests share logs: one at a time)
	env, log := fake(t, fakedriver.CUDA)
	env = append(env, fakeMeminfo(t))
	t.Run("discrete through NVML, matched by UUID though NVML numbers the GPUs the other way; integrated from the host's MemAvailable", func(t *testing.T) {
		log.Reset(t)
		runChild(t, "TestChildMemoryThroughNVML", withNVML(t, env)...)
		assert.Empty(t, log.Lines(t, "cuDevicePrimaryCtxRetain"), "no context was created to read memory")
		assert.Empty(t, log.Lines(t, "cuMemAlloc"), "no memory was allocated")
	})
	t.Run("a GB10-like device (integrated, NVML's total the host's RAM): the host's figures, not NVML's", func(t *testing.T) {
		runChild(t, "TestChildMemoryThroughNVML", withNVML(t, append(env, "GPUINIT_FAKE_NVML_TOTAL=137438953472", "GPUINIT_FAKE_CUDA_PAGEABLE=1"))...)
	})
	t.Run("without NVML: only where the primary context is already active; a Jetson-like device from meminfo", func(t *testing.T) {
		log.Reset(t)
		runChild(t, "TestChildMemoryWithoutNVML", append(env, EnvNVMLLibrary+"=/nonexistent/libnvidia-ml.so.1")...)
		assert.Empty(t, log.Lines(t, "cuDevicePrimaryCtxRetain 1"), "device 1, which nothing used, got no context")
	})
	for _, slice := range []string{"1", "2"} {
		t.Run("MIG instance "+slice+": its own UUID, instance ids, profile, parent and slice of memory", func(t *testing.T) {
			runChild(t, "TestChildMIGFacts", withNVML(t, append(env, "GPUINIT_FAKE_CUDA_MIG="+slice, "SLICE="+slice))...)
		})
	}
	nvmlLog := fakedriver.NewCallLog(t)
	t.Run("R570 and later: a GPU in MIG mode is two devices, its instances, beside a whole GPU", func(t *testing.T) {
		log.Reset(t)
		nvmlLog.Reset(t)
		runChild(t, "TestChildMIGInstancesAsDevices", withNVML(t, append(env, "GPUINIT_FAKE_CUDA_MIG=1,2", "GPUINIT_FAKE_NVML_LOG="+string(nvmlLog)))...)
		assert.Empty(t, log.Lines(t, "cuDevicePrimaryCtxRetain"), "no context was created to read memory")
		assert.Empty(t, log.Lines(t, "cuMemAlloc"), "no memory was allocated")
		assert.Subset(t, nvmlLog.Lines(t, "nvmlDeviceGetMemoryInfo"), []string{
			"nvmlDeviceGetMemoryInfo MIG-01234567-89ab-cdef-fedc-ba987654324a", "nvmlDeviceGetMemoryInfo MIG-01234567-89ab-cdef-fedc-ba987654324b"},
			"each instance's memory through its own MIG device handle")
		assert.Empty(t, nvmlLog.Lines(t, "nvmlDeviceGetMemoryInfo GPU-01234567"), "never the parent GPU's")
	})
	t.Run("a GB10-like device whose integrated attribute fails once: unknown, not NVML's figure, then the host's", func(t *testing.T) {
		nvmlLog.Reset(t)
		runChild(t, "TestChildMemoryIntegratedUnknown", withNVML(t, append(env, "GPUINIT_FAKE_CUDA_ATTR_FAIL=18", "GPUINIT_FAKE_CUDA_ATTR_FAIL_TIMES=1",
			"GPUINIT_FAKE_NVML_TOTAL=137438953472", "GPUINIT_FAKE_NVML_LOG="+string(nvmlLog)))...)
		assert.Equal(t, []string{"nvmlDeviceGetMemoryInfo GPU-f12e3d4c-9b8a-4796-85a4-b3c2d1e0ff0e"}, nvmlLog.Lines(t, "nvmlDeviceGetMemoryInfo"),
			"NVML asked only for the discrete device, once the attribute said it was one")
	})
}

func TestChildMemoryThroughNVML(t *testing.T) {
	child(t)
	r := device.New(process)
	ctx := context.Background()
	want := map[int]driver.Memory{
		0: {Free: 140000000000, Total: 150754820096, Source: driver.MemoryNVML}, // the fake NVML's figures, by CUDA ordinal
		1: {Free: hostAvailable, Total: hostTotal, Source: driver.MemoryHost},   // integrated: the host's MemAvailable, not MemFree
	}
	if v := os.Getenv("GPUINIT_FAKE_NVML_TOTAL"); v != "" { // NVML's total for every device
		total, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err)
		want[0] = driver.Memory{Free: want[0].Free, Total: total, Source: driver.MemoryNVML}
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			m, err := r.Memory(ctx, g%2)
			if assert.NoError(t, err) {
				assert.Equal(t, want[g%2], m, "device %d", g%2)
			}
		})
	}
	wg.Wait()
	dm, err := r.DeviceMap(ctx)
	require.NoError(t, err)
	require.Len(t, dm.Devices, 2)
	assert.Equal(t, 1, dm.Devices[0].Index, "NVML's index, which is not CUDA's ordinal")
	assert.Equal(t, 0, dm.Devices[1].Index)
	assert.Equal(t, "GPU-f12e3d4c-9b8a-4796-85a4-b3c2d1e0ff0e", dm.Devices[0].UUID)
	info, err := r.Device(ctx, 1)
	require.NoError(t, err)
	assert.True(t, info.Integrated)
	assert.Equal(t, os.Getenv("GPUINIT_FAKE_CUDA_PAGEABLE") == "1", info.PageableMemoryAccess)
	childtest.Until(t, "the health watch settles", func() (bool, <-chan struct{}) { s := r.Stats(); return s.HealthSettled(), s.Changed() })
	for ordinal := range 2 {
		allocs := childtest.AllocsPerRun(100, func() { _, _ = r.Memory(ctx, ordinal) })
		if !raceEnabled || ordinal == 0 { // the race detector's hooks in syscall.Read allocate
			assert.Zero(t, allocs, "device %d: the steady path allocates nothing", ordinal)
		}
	}
}

func TestChildMemoryWithoutNVML(t *testing.T) {
	child(t)
	r := device.New(process)
	ctx := context.Background()
	_, err := r.Memory(ctx, 0)
	require.ErrorIs(t, err, device.ErrNotSupported)
	assert.ErrorContains(t, err, "free memory is unknown")
	assert.ErrorContains(t, err, "never creates one")
	// A server's engine makes device 0's primary context active: now the
	// driver can say, and nothing new is created to ask it.
	require.NoError(t, r.Do(ctx, 0, func() error { return nil }))
	m, err := r.Memory(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, driver.Memory{Free: 150754820096 - 1<<30, Total: 150754820096, Source: driver.MemoryDriverContext}, m, "the fake driver's own figure")
	m, err = r.Memory(ctx, 1)
	require.NoError(t, err, "a Jetson-like device needs no NVML")
	assert.Equal(t, driver.Memory{Free: hostAvailable, Total: hostTotal, Source: driver.MemoryHost}, m)
}

func TestChildMIGFacts(t *testing.T) {
	child(t)
	r := device.New(process)
	ctx := context.Background()
	info, err := r.Device(ctx, 1)
	require.NoError(t, err)
	slice := os.Getenv("SLICE")
	wantUUID := map[string]string{"1": "MIG-01234567-89ab-cdef-fedc-ba987654324a", "2": "MIG-01234567-89ab-cdef-fedc-ba987654324b"}[slice]
	assert.Equal(t, wantUUID, info.UUID)
	assert.Equal(t, &driver.MIG{ParentUUID: "GPU-01234567-89ab-cdef-fedc-ba9876543210", ParentPCIBusID: "0001:3b:02.0",
		GPUInstance: map[string]int{"1": 7, "2": 8}[slice], ComputeInstance: 0, Profile: "1g.10gb"}, info.MIG)
	assert.Equal(t, 14, info.Multiprocessors, "the slice's, not the GPU's")
	assert.Equal(t, uint64(10737418240), info.TotalMemory)
	assert.False(t, info.Integrated)
	m, err := r.Memory(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, driver.Memory{Free: map[string]uint64{"1": 9663676416, "2": 8589934592}[slice], Total: 10737418240, Source: driver.MemoryNVML}, m,
		"the slice's memory, through its own NVML handle")
	whole, err := r.Device(ctx, 0)
	require.NoError(t, err)
	assert.Nil(t, whole.MIG)
	if !raceEnabled {
		childtest.Until(t, "the health watch settles", func() (bool, <-chan struct{}) { s := r.Stats(); return s.HealthSettled(), s.Changed() })
		assert.Zero(t, childtest.AllocsPerRun(100, func() { _, _ = r.Memory(ctx, 1) }), "a MIG slice's read allocates nothing")
	}
}

func TestChildMIGInstancesAsDevices(t *testing.T) {
	child(t)
	r := device.New(process)
	ctx := context.Background()
	infos, err := r.Devices(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 3, "the whole H200 and the A100's two instances, never the A100 itself")
	assert.Equal(t, "GPU-f12e3d4c-9b8a-4796-85a4-b3c2d1e0ff0e", infos[0].UUID)
	assert.Nil(t, infos[0].MIG)
	for i, want := range []struct {
		uuid string
		gi   int
		free uint64
	}{{"MIG-01234567-89ab-cdef-fedc-ba987654324a", 7, 9663676416}, {"MIG-01234567-89ab-cdef-fedc-ba987654324b", 8, 8589934592}} {
		ordinal := 1 + i
		info := infos[ordinal]
		assert.Equal(t, want.uuid, info.UUID)
		assert.Equal(t, "0001:3b:02.0", info.PCIBusID, "its GPU's, which both instances share")
		assert.Equal(t, &driver.MIG{ParentUUID: "GPU-01234567-89ab-cdef-fedc-ba9876543210", ParentPCIBusID: "0001:3b:02.0",
			GPUInstance: want.gi, ComputeInstance: 0, Profile: "1g.10gb"}, info.MIG, "device %d", ordinal)
		assert.Equal(t, 14, info.Multiprocessors)
		assert.Equal(t, uint64(10737418240), info.TotalMemory)
		m, err := r.Memory(ctx, ordinal)
		require.NoError(t, err)
		assert.Equal(t, driver.Memory{Free: want.free, Total: 10737418240, Source: driver.MemoryNVML}, m, "device %d: its own slice", ordinal)
		if !raceEnabled {
			childtest.Until(t, "the health watch settles", func() (bool, <-chan struct{}) { s := r.Stats(); return s.HealthSettled(), s.Changed() })
			assert.Zero(t, childtest.AllocsPerRun(100, func() { _, _ = r.Memory(ctx, ordinal) }), "device %d", ordinal)
		}
	}
	// A second Runtime over the same driver sees the same three: dedupe is by
	// UUID for MIG instances, whose PCI bus id is their GPU's.
	inventory, skipped, err := device.Inventory(ctx, r, device.New(process))
	require.NoError(t, err)
	assert.Empty(t, skipped)
	var got []string
	for _, d := range inventory {
		got = append(got, d.Backend+" "+d.UUID)
	}
	assert.Equal(t, []string{"cuda GPU-f12e3d4c-9b8a-4796-85a4-b3c2d1e0ff0e",
		"cuda MIG-01234567-89ab-cdef-fedc-ba987654324a", "cuda MIG-01234567-89ab-cdef-fedc-ba987654324b"}, got,
		"two instances on one bus id are two devices, each listed once")
}

func TestChildMemoryIntegratedUnknown(t *testing.T) {
	child(t)
	require.NoError(t, process.Init(context.Background()))
	m, err := process.ReadMemory(1)
	require.ErrorIs(t, err, driver.ErrNotSupported, "got %+v", m)
	assert.ErrorContains(t, err, "cuDeviceGetAttribute(18)")
	assert.ErrorContains(t, err, "NVML's figure for such a device is wrong")
	assert.Equal(t, driver.Memory{}, m)
	// The attribute reads again: the failure was not kept.
	m, err = process.ReadMemory(1)
	require.NoError(t, err)
	assert.Equal(t, driver.Memory{Free: hostAvailable, Total: hostTotal, Source: driver.MemoryHost}, m)
	m, err = process.ReadMemory(0)
	require.NoError(t, err)
	assert.Equal(t, driver.Memory{Free: 140000000000, Total: 137438953472, Source: driver.MemoryNVML}, m, "the discrete device's, NVML's total as the fake sets it")
}

func TestDoRestoresTheThreadsContext(t *testing.T) {
	t.Parallel() // its child has files of its own
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
	t.Parallel() // its children have files of their own (its subtests share a log: one at a time)
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
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
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
			t.Parallel()
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
	t.Parallel() // its child has files of its own
	env, log := fake(t, fakedriver.CUDA)
	log.Reset(t)
	runChild(t, "TestChildGeneratorBuffer", env...)
	assert.Equal(t, []string{"cuMemAlloc_v2 64", "cuMemFree_v2", "cuMemAlloc_v2 128", "cuMemFree_v2", fmt.Sprintf("cuMemAlloc_v2 %d", 4*loader.MaxDrawValues), "cuMemFree_v2"},
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
	for _, n := range []int{16, 16, 16, 8, 32, 2*loader.MaxDrawValues + 8} {
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
