//go:build linux && cgo && !nohip

package hip

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/host"
	"github.com/gpuinit/gpuinit/device/internal/loader"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The runtime is loaded once per process, so each configuration runs in a
// child: this test binary, re-executed with -test.run naming one TestChild
// function. TestChild functions skip unless the marker is set.
const children = childtest.Marker("GPUINIT_HIP_TEST_CHILD")

var (
	runChild   = children.Run
	startChild = children.Start
	child      = children.Child
)

// fakeHost builds the fake libamdhip64.so.6 and libhiprand.so.1 side by side,
// a sysfs tree with their KFD topology (and a third GPU of the host that this
// process does not see), and a /dev with a kfd node; it returns the
// environment that uses them, and the call log's path.
func fakeHost(t *testing.T, hip fakedriver.Library, env ...string) (childEnv []string, log fakedriver.CallLog) {
	t.Helper()
	dir := t.TempDir()
	lib := fakedriver.BuildInto(t, dir, hip)
	fakedriver.BuildInto(t, dir, fakedriver.HIPRAND)
	sys := t.TempDir()
	for i, props := range []string{
		"cpu_cores_count 64\nsimd_count 0\ngfx_target_version 0\n",
		"cpu_cores_count 0\nsimd_count 352\nsimd_per_cu 4\ngfx_target_version 90010\nlocation_id 33536\ndomain 0\nunique_id 42\n",
		"cpu_cores_count 0\nsimd_count 384\nsimd_per_cu 4\ngfx_target_version 110000\nlocation_id 768\ndomain 0\nunique_id 0\n",
		"cpu_cores_count 0\nsimd_count 440\nsimd_per_cu 4\ngfx_target_version 90010\nlocation_id 49408\ndomain 0\nunique_id 17217756948692853760\n",
	} {
		node := filepath.Join(sys, "class/kfd/kfd/topology/nodes", fmt.Sprint(i))
		require.NoError(t, os.MkdirAll(node, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(node, "properties"), []byte(props), 0o644))
	}
	for bus, vram := range map[string][2]string{"0000:c1:00.0": {"68702699520", "4294967296"}, "0000:03:00.0": {"51522830336", "0"}} {
		pci := filepath.Join(sys, "bus/pci/devices", bus)
		require.NoError(t, os.MkdirAll(pci, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(pci, "mem_info_vram_total"), []byte(vram[0]+"\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(pci, "mem_info_vram_used"), []byte(vram[1]+"\n"), 0o644))
	}
	dev := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dev, "kfd"), nil, 0o666))
	log = fakedriver.NewCallLog(t)
	return append([]string{EnvLibrary + "=" + lib, host.EnvSysfsRoot + "=" + sys, host.EnvDevRoot + "=" + dev,
		"GPUINIT_FAKE_HIP_LOG=" + string(log), EnvHiprandLibrary + "=",
		EnvSMILibrary + "=" + fakedriver.NotInstalled("librocm_smi64.so.7")}, env...), log // smiHost adds the fake
}

func TestOverTheFakeRuntime(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
	env, _ := fakeHost(t, fakedriver.HIP)
	env = slices.Clip(env) // the parallel subtests append to it
	t.Run("contract and exact device facts", func(t *testing.T) { t.Parallel(); runChild(t, "TestChildDevices", env...) })
	t.Run("nothing loaded or initialized before Init", func(t *testing.T) {
		t.Parallel()
		env, log := fakeHost(t, fakedriver.HIP) // a log of its own
		runChild(t, "TestChildLaziness", env...)
		calls := log.Lines(t)
		require.NotEmpty(t, calls)
		assert.Equal(t, "hipInit", calls[0], "hipInit is the first call into HIP")
		assert.Empty(t, log.Lines(t, "implicit-init"), "no other call started the runtime")
	})
	t.Run("a generator keeps its device buffer until a draw needs more, and Close frees it", func(t *testing.T) {
		t.Parallel()
		env, log := fakeHost(t, fakedriver.HIP) // a log of its own
		runChild(t, "TestChildGeneratorBuffer", env...)
		assert.Equal(t, []string{"hipMalloc 64", "hipFree", "hipMalloc 128", "hipFree", fmt.Sprintf("hipMalloc %d", 4*loader.MaxDrawValues), "hipFree"},
			log.Lines(t, "hipMalloc", "hipFree"),
			"16 values three times, then 8, then 32, then 2 buffers' worth and 8: grown to its bound and no further")
	})
	t.Run("HSA_OVERRIDE_GFX_VERSION applies to every device", func(t *testing.T) {
		t.Parallel()
		runChild(t, "TestChildOverride", append(env, host.EnvGfxOverride+"=10.3.0")...)
	})
	t.Run("no device: the hint names /dev/kfd and the variable that hides every GPU", func(t *testing.T) {
		t.Parallel()
		noKFD := t.TempDir()
		runChild(t, "TestChildNoDevice", append(env, "GPUINIT_FAKE_HIP_INIT=101", host.EnvDevRoot+"="+noKFD, "ROCR_VISIBLE_DEVICES=-1")...)
	})
	t.Run("no device, found by hipGetDeviceCount after hipInit succeeded", func(t *testing.T) {
		t.Parallel()
		noKFD := t.TempDir()
		runChild(t, "TestChildNoDevice", append(env, "GPUINIT_FAKE_HIP_DEVICES=0", "GPUINIT_FAKE_HIP_INIT=0",
			"WANT_OP=hipGetDeviceCount", "WANT_CODE=100", host.EnvDevRoot+"="+noKFD)...) // -1 would fail hipInit itself
	})
	t.Run("free memory from amdgpu's sysfs counters, by PCI bus id", func(t *testing.T) {
		t.Parallel()
		runChild(t, "TestChildMemory", env...)
	})
	t.Run("Do makes the device current and puts the thread's back", func(t *testing.T) {
		t.Parallel()
		env, log := fakeHost(t, fakedriver.HIP) // a log of its own
		runChild(t, "TestChildDo", env...)
		current := log.Lines(t, "current ")
		assert.Equal(t, []string{"current 1", "current 0", "current 1", "current 0", "current 1", "current 0"}, current,
			"Do(1) around Do(0), each restoring; then Do(1) whose fn panics, restoring too")
	})
	t.Run("a gfx target the ROCm libraries have no code for", func(t *testing.T) {
		t.Parallel()
		runChild(t, "TestChildUnsupportedTarget", append(env, "GPUINIT_FAKE_HIPRAND_FAIL=201")...)
	})
	t.Run("too old for the server's floor", func(t *testing.T) {
		t.Parallel()
		runChild(t, "TestChildFloor", append(env, "GPUINIT_FAKE_HIP_VERSION=50221153")...)
	})
	t.Run("a negative device count is the same error for every runtime", func(t *testing.T) {
		t.Parallel()
		runChild(t, "TestChildNegativeCount", append(env, "GPUINIT_FAKE_HIP_COUNT=-3")...)
	})
}

// TestChildNegativeCount: a runtime library that answers a negative count
// fails Init with an error, memoized for every later Runtime of the process.
// (Before the one-time init was a once.OnceFunc that refused the count, the
// count panicked the first Runtime's init and the second was told that
// hipInit had not succeeded.)
func TestChildNegativeCount(t *testing.T) {
	child(t)
	first := device.New(process).Init(context.Background())
	require.ErrorIs(t, first, device.ErrDriverMismatch)
	assert.ErrorContains(t, first, "the runtime reports -3 devices")
	second := device.New(process).Init(context.Background())
	require.ErrorIs(t, second, device.ErrDriverMismatch, "the second runtime gets the same failure, not 'not initialized'")
	assert.Equal(t, first.Error(), second.Error())
	var pe *lazy.PanicError
	assert.False(t, errors.As(first, &pe), "an error, not a panic: %v", first)
}

func TestChildDevices(t *testing.T) {
	child(t)
	devicetest.TestBackend(t, process, devicetest.GeneratorsDraw(philox.FillSequential))
	want := []device.Info{
		{Ordinal: 0, Name: "Fake AMD Instinct MI250X", Arch: "gfx90a", TotalMemory: 68702699520,
			UUID: "GPU-eef1c2b8a3d9e400", PCIBusID: "0000:c1:00.0", Multiprocessors: 110},
		{Ordinal: 1, Name: "Fake AMD Radeon PRO W7900", Arch: "gfx1100", TotalMemory: 51522830336,
			PCIBusID: "0000:03:00.0", Multiprocessors: 96},
	}
	for i, w := range want {
		got, err := process.Device(i)
		require.NoError(t, err)
		assert.Equal(t, w, got, "device %d: matched to its KFD node by PCI bus id, not by index", i)
	}
	v, err := process.DriverVersion()
	require.NoError(t, err)
	assert.Equal(t, 60241134, v)
}

func TestChildLaziness(t *testing.T) {
	child(t)
	r, err := device.Open("hip")
	require.NoError(t, err)
	require.NoError(t, r.LazyCall(context.Background(), func(context.Context) error { return nil }))
	_, err = r.DriverVersion()
	assert.ErrorIs(t, err, driver.ErrNotInitialized, "hipDriverGetVersion would start the runtime")
	assert.Empty(t, fakedriver.MappedVendorLibraries(t), "mapped before the first Init")
	require.NoError(t, r.Init(context.Background()))
}

func TestChildOverride(t *testing.T) {
	child(t)
	require.NoError(t, process.Init(context.Background()))
	for i := range 2 {
		info, err := process.Device(i)
		require.NoError(t, err)
		assert.Equal(t, "gfx1030", info.Arch)
		assert.Equal(t, "HSA_OVERRIDE_GFX_VERSION", info.ArchSource)
		assert.NotEmpty(t, info.ArchWarning, "%s as gfx1030 crosses ISA families", info.NativeArch)
	}
}

func TestChildNoDevice(t *testing.T) {
	child(t)
	err := process.Init(context.Background())
	require.ErrorIs(t, err, device.ErrNoDevice)
	var de *device.DriverError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, cmp.Or(os.Getenv("WANT_OP"), "hipInit"), de.Op)
	assert.Equal(t, cmp.Or(os.Getenv("WANT_CODE"), "101"), strconv.Itoa(de.Code), "ROCm before 6.2 reports a missing /dev/kfd as 101")
	assert.Contains(t, de.Hint, "kfd: amdgpu is not loaded")
	if os.Getenv("ROCR_VISIBLE_DEVICES") != "" {
		assert.Contains(t, de.Hint, `ROCR_VISIBLE_DEVICES="-1" hides every device`)
	}
}

func TestChildMemory(t *testing.T) {
	child(t)
	r := device.New(process)
	ctx := context.Background()
	m, err := r.Memory(ctx, 0)
	free, total := m.Free, m.Total
	require.NoError(t, err)
	assert.Equal(t, uint64(68702699520), total)
	assert.Equal(t, uint64(68702699520-4294967296), free)
	m, err = r.Memory(ctx, 1)
	free = m.Free
	require.NoError(t, err)
	assert.Equal(t, uint64(51522830336), free)
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
	philox.FillSequential(want, 42, 0)
	assert.Equal(t, want, drawn, "the reused buffer changes nothing drawn")
	require.NoError(t, g.Close())
}

func TestChildDo(t *testing.T) {
	child(t)
	r := device.New(process)
	ctx := context.Background()
	require.NoError(t, r.Do(ctx, 1, func() error { return r.Do(ctx, 0, func() error { return nil }) }))
	assert.PanicsWithValue(t, "boom", func() { _ = r.Do(ctx, 1, func() error { panic("boom") }) }, "the panic goes on, after the restore")
}

func TestChildUnsupportedTarget(t *testing.T) {
	child(t)
	require.NoError(t, process.Init(context.Background()))
	g, err := process.NewGenerator(0)
	require.NoError(t, err)
	defer g.Close()
	err = g.Generate(make([]uint32, 8))
	var de *device.DriverError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "HIPRAND_STATUS_LAUNCH_FAILURE", de.Name)
	assert.Contains(t, de.Hint, "HSA_OVERRIDE_GFX_VERSION")
}

func TestChildFloor(t *testing.T) {
	child(t)
	r := device.New(process)
	require.NoError(t, r.RequireDriverVersion("hip", 60000000))
	err := r.Init(context.Background())
	require.ErrorIs(t, err, device.ErrDriverMismatch)
	assert.ErrorContains(t, err, "the driver reports 50221153, this runtime requires 60000000")
}

func TestMissingLibraryIsDriverNotFound(t *testing.T) {
	t.Parallel() // its child has files of its own
	runChild(t, "TestChildMissingLibrary", EnvLibrary+"=/nonexistent/libamdhip64.so.6")
}

func TestChildMissingLibrary(t *testing.T) {
	child(t)
	err := process.Init(context.Background())
	require.ErrorIs(t, err, device.ErrDriverNotFound)
	var de *device.DriverError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "dlopen "+EnvLibrary, de.Op)
	assert.Equal(t, "stat /nonexistent/libamdhip64.so.6: no such file or directory", de.Message, "the file, named once")
	assert.Contains(t, de.Hint, "names a file that is not there")
	assert.NotContains(t, de.Hint, "lacks the ROCm runtime", "the user named the file")
}

func TestMissingSymbolIsDriverMismatchNamingIt(t *testing.T) {
	t.Parallel() // its child has files of its own
	env, _ := fakeHost(t, fakedriver.Library{Source: "fakehip.c", Soname: "libamdhip64.so.6",
		Defines: []string{"GPUINIT_FAKE_HIP_OMIT_hipDeviceGetPCIBusId"}})
	runChild(t, "TestChildMissingSymbol", env...)
}

func TestChildMissingSymbol(t *testing.T) {
	child(t)
	err := process.Init(context.Background())
	require.ErrorIs(t, err, device.ErrDriverMismatch)
	var de *device.DriverError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "dlsym hipDeviceGetPCIBusId", de.Op)
}

func TestWithoutHiprandGeneratorsAreUnsupported(t *testing.T) {
	t.Parallel() // its child has files of its own
	env, _ := fakeHost(t, fakedriver.HIP, EnvHiprandLibrary+"=/nonexistent/libhiprand.so.1")
	runChild(t, "TestChildNoHiprand", env...)
}

func TestChildNoHiprand(t *testing.T) {
	child(t)
	require.NoError(t, process.Init(context.Background()))
	_, err := process.NewGenerator(0)
	require.ErrorIs(t, err, device.ErrNotSupported)
	assert.ErrorContains(t, err, "libhiprand.so.1")
	n, err := process.Count()
	require.NoError(t, err, "the device stays usable")
	assert.Equal(t, 2, n)
}

// TestRealRuntime runs over whatever libamdhip64 the loader finds (or
// GPUINIT_HIP_LIBRARY names): in CI's hip leg, Debian's HIP 5.2, which without
// /dev/kfd answers hipInit with 101; on a ROCm host, the real thing.
func TestRealRuntime(t *testing.T) {
	t.Parallel() // its child has files of its own
	out, skipped := startChild(t, "TestChildRealRuntime")
	if skipped {
		t.Skipf("no HIP runtime here:\n%s", out)
	}
	t.Log(out)
}

func TestChildRealRuntime(t *testing.T) {
	child(t)
	err := process.Init(context.Background())
	if errors.Is(err, device.ErrDriverNotFound) {
		t.Skip("no HIP runtime library on this machine:", err)
	}
	t.Logf("hipInit: %v", err)
	if err == nil {
		devicetest.TestBackend(t, process, devicetest.GeneratorsDraw(philox.FillSequential))
		return
	}
	require.ErrorIs(t, err, device.ErrNoDevice)
	var de *device.DriverError
	require.ErrorAs(t, err, &de)
	assert.Contains(t, []int{100, 101}, de.Code, "ROCm 5.2 answers 101, later versions 100")
	assert.Contains(t, de.Error(), "/dev/kfd")
	devicetest.TestBackend(t, process)
}
