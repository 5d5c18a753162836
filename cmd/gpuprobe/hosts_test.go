//go:build linux && cgo

package main

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGPULibrariesTheBinaryNeedsToStart checks the binary's dynamic section:
// a GPU library there stops it before main on a host without that library.
// The default build needs none; a -tags cudalink build needs libcuda alone,
// since it loads libcurand at run time like the default build (so that
// -backend sim, and every host without cuRAND, still starts).
// Without tags, buildProbe's binary is this test binary, which links the
// same C code as gpuprobe's own build, and no other.
func TestGPULibrariesTheBinaryNeedsToStart(t *testing.T) {
	t.Parallel() // its go build overlaps the probes' runs
	linked := strings.Contains(os.Getenv("GPUPROBE_TEST_TAGS"), "cudalink")
	f, err := elf.Open(buildProbe(t))
	require.NoError(t, err)
	defer f.Close()
	needed, err := f.ImportedLibraries()
	require.NoError(t, err)
	var gpuLibs []string
	for _, lib := range needed {
		for _, gpu := range []string{"libcuda", "libcurand", "libnvidia-ml", "libamdhip64", "libhiprand", "librocrand"} {
			if strings.HasPrefix(lib, gpu) {
				gpuLibs = append(gpuLibs, lib)
			}
		}
	}
	if linked {
		assert.Equal(t, []string{"libcuda.so.1"}, gpuLibs, "-tags cudalink: DT_NEEDED %v", needed)
	} else {
		assert.Empty(t, gpuLibs, "DT_NEEDED %v", needed)
	}
	t.Logf("DT_NEEDED: %v", needed)
}

// fakeNVIDIAHost is the environment of a host with the fake libcuda (two
// GPUs, the second integrated) and, with curand, the fake libcurand. Its
// /proc/meminfo has hostAvailable bytes available, the integrated GPU's free
// memory.
//
// A -tags cudalink binary links libcuda: it gets the fake through the
// loader's path, which the default build ignores here.
func fakeNVIDIAHost(t *testing.T, curand bool) []string {
	t.Helper()
	dir := t.TempDir()
	cuda := fakedriver.BuildInto(t, dir, fakedriver.CUDA)
	env := []string{"GPUINIT_CUDA_LIBRARY=" + cuda, "GPUINIT_HIP_LIBRARY=" + fakedriver.NotInstalled("libamdhip64.so"),
		"GPUINIT_NVML_LIBRARY=" + fakedriver.BuildInto(t, dir, fakedriver.NVML),
		"LD_LIBRARY_PATH=" + dir + ":" + os.Getenv("LD_LIBRARY_PATH"),
		"GPUINIT_PROC_ROOT=" + dir}
	env = append(env, fakedriver.ShortWaits...)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "meminfo"),
		[]byte(fmt.Sprintf("MemTotal:       134217728 kB\nMemFree:         1048576 kB\nMemAvailable:   %d kB\n", hostAvailable>>10)), 0o644))
	if curand {
		return append(env, "GPUINIT_CURAND_LIBRARY="+fakedriver.BuildInto(t, dir, fakedriver.CURAND))
	}
	return append(env, "GPUINIT_CURAND_LIBRARY="+fakedriver.NotInstalled("libcurand.so.10"))
}

// hostAvailable is the fake NVIDIA host's MemAvailable, in bytes.
const hostAvailable = 48 << 30

func TestOverTheFakeDrivers(t *testing.T) {
	t.Parallel() // its children mostly wait: overlap them with the others'
	bin := buildProbe(t)
	free := func(n uint64) *uint64 { return &n }
	wantDevices := []deviceInfo{
		{Ordinal: 0, Name: "Fake NVIDIA H200", Arch: "sm_90", TotalMemory: 150754820096, FreeMemory: free(140000000000), MemorySource: "nvml",
			UUID: "GPU-f12e3d4c-9b8a-4796-85a4-b3c2d1e0ff0e", PCIBusID: "0000:18:00.0", ComputeCapability: "9.0", Multiprocessors: 132},
		{Ordinal: 1, Name: "Fake NVIDIA integrated sm_86", Arch: "sm_86", TotalMemory: 85899345920, FreeMemory: free(hostAvailable), MemorySource: "meminfo",
			UUID: "GPU-01234567-89ab-cdef-fedc-ba9876543210", PCIBusID: "0001:3b:02.0", ComputeCapability: "8.6", Multiprocessors: 108, Integrated: true},
	}
	for _, backend := range []string{"cuda", "auto"} {
		t.Run("-backend "+backend+": both devices exactly, every scenario, RNG match", func(t *testing.T) {
			t.Parallel()
			r := probeRun(t, bin, fakeNVIDIAHost(t, true), "-json", "-backend", backend, "-require-gpu")
			require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			rep := decode(t, r)
			assert.Equal(t, "cuda", rep.Backend)
			assert.Equal(t, 12040, rep.DriverVersion)
			for i, d := range rep.Devices {
				require.NotNil(t, d.Health, "device %d", i)
				assert.True(t, d.Health.Watched, "device %d's NVML events are watched: %s", i, d.Health.Why)
				require.NotNil(t, d.Health.Counters, "device %d's counters are read", i)
				require.NotNil(t, d.Health.Counters.Persistence)
				assert.True(t, *d.Health.Counters.Persistence)
				require.NotNil(t, d.Canary, "device %d", i)
				assert.True(t, d.Canary.OK, "device %d's canary: %+v", i, d.Canary.Error)
				rep.Devices[i].Health, rep.Devices[i].Canary = nil, nil
			}
			assert.Equal(t, wantDevices, rep.Devices, "free memory from the fake NVML, matched by UUID; the integrated GPU's from the host's MemAvailable")
			assert.Empty(t, rep.Lost)
			require.Len(t, rep.Scenarios, 6)
			for _, s := range rep.Scenarios {
				assert.Equal(t, "ok", s.Verdict, "%s: %s", s.Name, s.Error)
			}
			require.NotNil(t, rep.RNG)
			assert.Equal(t, "match", rep.RNG.Verdict, rep.RNG.Error)
		})
	}
	t.Run("without libcurand the RNG check is unsupported, with the reason, and that is no failure", func(t *testing.T) {
		t.Parallel()
		skipIfLinked(t)
		r := probeRun(t, bin, fakeNVIDIAHost(t, false), "-json", "-backend", "cuda", "-scenario", "queued")
		require.Equal(t, exitOK, r.code, "stderr:\n%s", r.stderr)
		rep := decode(t, r)
		require.NotNil(t, rep.RNG)
		assert.Equal(t, "unsupported", rep.RNG.Verdict)
		assert.Contains(t, rep.RNG.Error, "libcurand.so.10")
		text := probeRun(t, bin, fakeNVIDIAHost(t, false), "-backend", "cuda", "-scenario", "queued")
		assert.Contains(t, text.stdout, "rng         unsupported")
		assert.Contains(t, text.stdout, "uuid GPU-f12e3d4c-9b8a-4796-85a4-b3c2d1e0ff0e, pci 0000:18:00.0, cc 9.0, 132 multiprocessors")
	})
	t.Run("a MIG instance: its parent, ids and profile in the report, GFD's label suffixes", func(t *testing.T) {
		t.Parallel()
		nfd := filepath.Join(t.TempDir(), "gpuinit")
		r := probeRun(t, bin, append(fakeNVIDIAHost(t, true), "GPUINIT_FAKE_CUDA_MIG=1"), "-json", "-backend", "cuda", "-scenario", "queued", "-nfd-file", nfd)
		require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		rep := decode(t, r)
		require.Len(t, rep.Devices, 2)
		mig := rep.Devices[1]
		assert.Equal(t, &driver.MIG{ParentUUID: "GPU-01234567-89ab-cdef-fedc-ba9876543210", ParentPCIBusID: "0001:3b:02.0",
			GPUInstance: 7, ComputeInstance: 0, Profile: "1g.10gb"}, mig.MIG)
		require.NotNil(t, mig.FreeMemory)
		assert.Equal(t, uint64(9663676416), *mig.FreeMemory, "the slice's own free memory")
		assert.Equal(t, "nvml", mig.MemorySource)
		assert.Nil(t, rep.Devices[0].MIG)
		features, err := os.ReadFile(nfd)
		require.NoError(t, err)
		got := labels(t, features)
		for name, want := range map[string]string{"mig-1g.10gb.count": "1", "mig-1g.10gb.memory": "10240", "mig-1g.10gb.multiprocessors": "14"} {
			assert.Equal(t, want, got["gpuinit.io/"+name], name)
		}
	})
	t.Run("the device map: ordinal, NVML's index, UUID, bus id, the visibility entry", func(t *testing.T) {
		t.Parallel()
		env := append(fakeNVIDIAHost(t, true), "CUDA_VISIBLE_DEVICES=0,1")
		rep := decode(t, probeRun(t, bin, env, "-json", "-backend", "cuda", "-scenario", "queued"))
		assert.Equal(t, &deviceMap{Order: "FASTEST_FIRST", Devices: []mappedDevice{
			{Ordinal: 0, Index: 1, UUID: "GPU-f12e3d4c-9b8a-4796-85a4-b3c2d1e0ff0e", PCIBusID: "0000:18:00.0", Selected: "CUDA_VISIBLE_DEVICES entry 0: 0"},
			{Ordinal: 1, Index: 0, UUID: "GPU-01234567-89ab-cdef-fedc-ba9876543210", PCIBusID: "0001:3b:02.0", Selected: "CUDA_VISIBLE_DEVICES entry 1: 1"},
		}}, rep.DeviceMap, "NVML numbers the GPUs the other way")
		text := probeRun(t, bin, env, "-backend", "cuda", "-scenario", "queued")
		assert.Contains(t, text.stdout, "device map  order FASTEST_FIRST\n"+
			"  0  index 1   GPU-f12e3d4c-9b8a-4796-85a4-b3c2d1e0ff0e  0000:18:00.0  CUDA_VISIBLE_DEVICES entry 0: 0\n"+
			"  1  index 0   GPU-01234567-89ab-cdef-fedc-ba9876543210  0001:3b:02.0  CUDA_VISIBLE_DEVICES entry 1: 1\n")
		assert.Contains(t, text.stdout, "140.4 GiB, 130.4 GiB free (nvml)")
	})
	t.Run("health events and counters in the report and the metrics", func(t *testing.T) {
		t.Parallel()
		events := filepath.Join(t.TempDir(), "events")
		// An application's Xid on device 0 and a double-bit ECC error on
		// device 1, delivered as soon as the watch waits.
		require.NoError(t, os.WriteFile(events, []byte("xid GPU-f12e3d4c-9b8a-4796-85a4-b3c2d1e0ff0e 13\n"+
			"ecc-double GPU-01234567-89ab-cdef-fedc-ba9876543210\n"), 0o644))
		prom := filepath.Join(t.TempDir(), "gpuinit.prom")
		env := append(fakeNVIDIAHost(t, true), "GPUINIT_FAKE_NVML_EVENTS="+events, "GPUINIT_FAKE_NVML_ECC_CORRECTED=7")
		r := probeRun(t, bin, env, "-json", "-backend", "cuda", "-scenario", "queued", "-watch", "1s", "-prom-file", prom)
		assert.Equal(t, exitFailed, r.code, "a device lost while probed fails the probe; stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		rep := decode(t, r)
		require.Len(t, rep.Lost, 1)
		assert.Equal(t, 1, rep.Lost[0].Ordinal)
		assert.Equal(t, "ecc", rep.Lost[0].Source)
		require.NotNil(t, rep.Devices[0].Health)
		assert.Equal(t, map[string]int64{"xid 13": 1}, rep.Devices[0].Health.Counted)
		metrics, err := os.ReadFile(prom)
		require.NoError(t, err)
		for _, line := range []string{
			`gpuinit_device_health_watched{backend="cuda",ordinal="0",uuid="GPU-f12e3d4c-9b8a-4796-85a4-b3c2d1e0ff0e"} 1`,
			`gpuinit_device_health_events{backend="cuda",ordinal="0",uuid="GPU-f12e3d4c-9b8a-4796-85a4-b3c2d1e0ff0e",event="xid 13"} 1`,
			`gpuinit_device_ecc_errors{backend="cuda",ordinal="0",uuid="GPU-f12e3d4c-9b8a-4796-85a4-b3c2d1e0ff0e",type="corrected"} 7`,
			`gpuinit_device_canary_ok{backend="cuda",ordinal="0",uuid="GPU-f12e3d4c-9b8a-4796-85a4-b3c2d1e0ff0e"} 1`,
			`gpuinit_device_lost{backend="cuda",ordinal="1",source="ecc"} 1`,
		} {
			assert.Contains(t, string(metrics), line+"\n")
		}
	})
	t.Run("an AMD host through the fake ROCm 6 runtime", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		hip := fakedriver.BuildInto(t, dir, fakedriver.HIP)
		fakedriver.BuildInto(t, dir, fakedriver.HIPRAND)
		env := append(fakedriver.NoGPUHost(t), "GPUINIT_HIP_LIBRARY="+hip, "GPUINIT_SYSFS_ROOT="+t.TempDir())
		r := probeRun(t, bin, env, "-json", "-require-gpu")
		require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		rep := decode(t, r)
		assert.Equal(t, "hip", rep.Backend)
		require.Len(t, rep.PassedOver, 1, "auto says why it passed over cuda")
		assert.Equal(t, "cuda", rep.PassedOver[0].Backend)
		if !strings.Contains(os.Getenv("GPUPROBE_TEST_TAGS"), "cudalink") {
			assert.Equal(t, noGPUKind(env, fakedriver.CUDANames), rep.PassedOver[0].Error.Kind, rep.PassedOver[0].Error.Message)
		}
		require.Len(t, rep.Devices, 2)
		assert.Equal(t, "Fake AMD Instinct MI250X", rep.Devices[0].Name)
		assert.Equal(t, "0000:c1:00.0", rep.Devices[0].PCIBusID)
		assert.Equal(t, "rocrand", rep.RNG.Ordering)
		assert.Equal(t, "match", rep.RNG.Verdict, rep.RNG.Error)
	})
}
