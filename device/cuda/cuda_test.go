//go:build linux && cgo && !nocuda

package cuda

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The driver is loaded once per process, so each configuration of it runs in
// a child: this test binary, re-executed with -test.run naming one TestChild
// function and the environment that sets up the driver. TestChild functions
// skip unless the marker is set.
const children = childtest.Marker("GPUINIT_CUDA_TEST_CHILD")

var (
	runChild   = children.Run
	startChild = children.Start
	child      = children.Child
)

// fake builds the fake libcuda.so.1 (from lib) and libcurand.so.10, and
// returns the environment that loads them and logs the driver's calls, with
// the log's path.
func fake(t *testing.T, lib fakedriver.Library, env ...string) (childEnv []string, log fakedriver.CallLog) {
	t.Helper()
	path := fakedriver.Build(t, lib)
	curand := fakedriver.Build(t, fakedriver.CURAND)
	log = fakedriver.NewCallLog(t)
	// A -tags cudalink binary links libcuda: the loader's path is how it gets
	// the fake (libcurand is loaded at run time in both builds).
	ldPath := filepath.Dir(path) + ":" + filepath.Dir(curand)
	if old := os.Getenv("LD_LIBRARY_PATH"); old != "" {
		ldPath += ":" + old
	}
	return append([]string{EnvLibrary + "=" + path, EnvCurandLibrary + "=" + curand, "GPUINIT_FAKE_CUDA_LOG=" + string(log),
		"LD_LIBRARY_PATH=" + ldPath}, env...), log
}

// skipIfLinked skips tests of run-time loading in a -tags cudalink build.
func skipIfLinked(t *testing.T) {
	t.Helper()
	if linked {
		t.Skip("-tags cudalink links libcuda: there is no loading of it to test")
	}
}

func TestOverTheFakeDriver(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
	env, _ := fake(t, fakedriver.CUDA)
	env = slices.Clip(env) // the parallel subtests append to it
	t.Run("contract and exact device facts", func(t *testing.T) { t.Parallel(); runChild(t, "TestChildDevices", env...) })
	t.Run("nothing loaded before Init, only the version read before cuInit", func(t *testing.T) {
		t.Parallel()
		env, log := fake(t, fakedriver.CUDA) // a log of its own
		runChild(t, "TestChildLaziness", env...)
		lines := log.Lines(t)
		require.GreaterOrEqual(t, len(lines), 2)
		assert.Equal(t, []string{"cuDriverGetVersion", "cuInit"}, lines[:2], "the calls before cuInit")
	})
	t.Run("a MIG instance's UUID", func(t *testing.T) {
		t.Parallel()
		runChild(t, "TestChildMIG", append(env, "GPUINIT_FAKE_CUDA_MIG=1")...)
	})
	t.Run("a negative device count is the same error for every runtime", func(t *testing.T) {
		t.Parallel()
		runChild(t, "TestChildNegativeCount", append(env, "GPUINIT_FAKE_CUDA_COUNT=-1")...)
	})
	t.Run("without libcurand, generators are unsupported (in both build modes: cuRAND is always loaded at run time)", func(t *testing.T) {
		t.Parallel()
		runChild(t, "TestChildNoCurand", append(env, EnvCurandLibrary+"=/nonexistent/libcurand.so.10")...)
	})
}

func TestChildDevices(t *testing.T) {
	child(t)
	devicetest.TestBackend(t, process, devicetest.GeneratorsDraw(philox.FillCURAND))
	info0, err := process.Device(0)
	require.NoError(t, err)
	info1, err := process.Device(1)
	require.NoError(t, err)
	assert.Equal(t, device.Info{
		Ordinal: 0, Name: "Fake NVIDIA H200", Arch: "sm_90", TotalMemory: 150754820096,
		UUID: "GPU-f12e3d4c-9b8a-4796-85a4-b3c2d1e0ff0e", PCIBusID: "0000:18:00.0",
		ComputeMajor: 9, Multiprocessors: 132,
	}, info0, "memory above 4 GiB through cuDeviceTotalMem_v2; UUID bytes read as unsigned")
	assert.Equal(t, device.Info{
		Ordinal: 1, Name: "Fake NVIDIA integrated sm_86", Arch: "sm_86", TotalMemory: 85899345920,
		UUID: "GPU-01234567-89ab-cdef-fedc-ba9876543210", PCIBusID: "0001:3b:02.0",
		ComputeMajor: 8, ComputeMinor: 6, Multiprocessors: 108, Integrated: true,
	}, info1, "each attribute read into its own field")
	v, err := process.DriverVersion()
	require.NoError(t, err)
	assert.Equal(t, 12040, v)
}

func TestChildLaziness(t *testing.T) {
	child(t)
	r, err := device.Open("cuda")
	require.NoError(t, err)
	require.NoError(t, r.LazyCall(context.Background(), func(context.Context) error { return nil }))
	_, err = r.DriverVersion()
	assert.ErrorIs(t, err, driver.ErrNotInitialized, "the version is not read before Init")
	if !linked {
		assert.Empty(t, fakedriver.MappedVendorLibraries(t), "mapped before the first Init")
	}
	require.NoError(t, r.Init(context.Background()))
	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	assert.Contains(t, string(maps), os.Getenv(EnvLibrary), "Init loaded the driver")
}

func TestChildMIG(t *testing.T) {
	child(t)
	require.NoError(t, process.Init(context.Background()))
	info, err := process.Device(1)
	require.NoError(t, err)
	assert.Equal(t, "MIG-01234567-89ab-cdef-fedc-ba987654324a", info.UUID, "cuDeviceGetUuid_v2 differs from its parent GPU's")
	info, err = process.Device(0)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(info.UUID, "GPU-"))
}

// TestChildNegativeCount: a driver that answers a negative count fails Init
// with an error, memoized for every later Runtime of the process. (Before
// the one-time init was a once.OnceFunc that refused the count, the count
// panicked the first Runtime's init, and that panic was memoized as success:
// the second was told "cuInit has not succeeded in this process".)
func TestChildNegativeCount(t *testing.T) {
	child(t)
	first := device.New(process).Init(context.Background())
	require.ErrorIs(t, first, device.ErrDriverMismatch)
	assert.ErrorContains(t, first, "the driver reports -1 devices")
	second := device.New(process).Init(context.Background())
	require.ErrorIs(t, second, device.ErrDriverMismatch, "the second runtime gets the same failure, not 'not initialized'")
	assert.Equal(t, first.Error(), second.Error())
	var pe *lazy.PanicError
	assert.False(t, errors.As(first, &pe), "an error, not a panic: %v", first)
}

func TestChildNoCurand(t *testing.T) {
	child(t)
	require.NoError(t, process.Init(context.Background()))
	_, err := process.NewGenerator(0)
	require.ErrorIs(t, err, device.ErrNotSupported)
	assert.ErrorContains(t, err, "libcurand.so.10")
	var de *device.DriverError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "dlopen "+EnvCurandLibrary, de.Op)
	n, err := process.Count()
	require.NoError(t, err, "the device stays usable")
	assert.Equal(t, 2, n)
}

func TestMissingLibraryIsDriverNotFound(t *testing.T) {
	t.Parallel() // its child has files of its own
	skipIfLinked(t)
	runChild(t, "TestChildMissingLibrary", EnvLibrary+"=/nonexistent/libcuda.so.1")
}

func TestChildMissingLibrary(t *testing.T) {
	child(t)
	err := process.Init(context.Background())
	require.ErrorIs(t, err, device.ErrDriverNotFound)
	var de *device.DriverError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "dlopen "+EnvLibrary, de.Op, "the user's variable named the file")
	assert.Equal(t, "stat /nonexistent/libcuda.so.1: no such file or directory", de.Message, "the file, named once")
	assert.Contains(t, de.Hint, "names a file that is not there")
	assert.NotContains(t, de.Hint, "install the NVIDIA driver", "the user named the file: advice about that file")
	assert.Equal(t, device.ClassNeedsOperator, device.ClassOf(err))
	assert.Same(t, err, process.Init(context.Background()), "memoized")
}

func TestMissingSymbolIsDriverMismatchNamingIt(t *testing.T) {
	t.Parallel() // its child has files of its own
	skipIfLinked(t)
	env, _ := fake(t, fakedriver.Library{Source: "fakecuda.c", Soname: "libcuda.so.1",
		Defines: []string{"GPUINIT_FAKE_CUDA_OMIT_cuDeviceTotalMem_v2"}})
	runChild(t, "TestChildMissingSymbol", env...)
}

func TestChildMissingSymbol(t *testing.T) {
	child(t)
	err := process.Init(context.Background())
	require.ErrorIs(t, err, device.ErrDriverMismatch)
	var de *device.DriverError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "dlsym cuDeviceTotalMem_v2", de.Op)
	assert.Empty(t, de.Name, "Name is for a code's name")
	assert.Contains(t, err.Error(), "lacks cuDeviceTotalMem_v2")
	assert.Contains(t, de.Hint, "upgrade the NVIDIA driver")
}

// TestRealDriver runs over whatever libcuda.so.1 the loader finds (or
// GPUINIT_CUDA_LIBRARY names): in CI's cuda leg, Debian's driver library 535,
// which on a machine without a GPU answers cuInit with CUDA_ERROR_NO_DEVICE
// after reporting its version; on a GPU host, the real thing, with every
// device check and the device generator against rng/philox.
func TestRealDriver(t *testing.T) {
	t.Parallel() // its child has files of its own
	out, skipped := startChild(t, "TestChildRealDriver")
	if skipped {
		t.Skipf("no NVIDIA driver library here:\n%s", out)
	}
	t.Log(out)
}

func TestChildRealDriver(t *testing.T) {
	child(t)
	err := process.Init(context.Background())
	if errors.Is(err, device.ErrDriverNotFound) {
		t.Skip("no NVIDIA driver library on this machine:", err)
	}
	v, verr := process.DriverVersion()
	require.NoError(t, verr, "the version is read before cuInit, so it is known either way")
	t.Logf("libcuda reports driver version %d; cuInit: %v", v, err)
	if err == nil {
		devicetest.TestBackend(t, process, devicetest.GeneratorsDraw(philox.FillCURAND))
		return
	}
	var de *device.DriverError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "cuInit", de.Op)
	assert.Equal(t, 100, de.Code)
	assert.Equal(t, "CUDA_ERROR_NO_DEVICE", de.Name)
	assert.Equal(t, "no CUDA-capable device is detected", de.Message, "the driver's own description")
	devicetest.TestBackend(t, process)
}
