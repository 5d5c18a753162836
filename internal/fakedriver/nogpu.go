package fakedriver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The vendor runtimes' file names, as the backends look for them.
var (
	CUDANames = []string{"libcuda.so.1"}
	HIPNames  = []string{"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"}
)

// NoGPUHost returns the environment of a host with no GPU, as near as this
// machine allows: no GPUINIT_*_LIBRARY variable (set empty, so a developer's
// own does not leak in), no device nodes (an empty GPUINIT_DEV_ROOT), an
// empty sysfs and an empty ROCM_PATH.
//
// Naming a missing file instead would not do: a file the user named is an
// operator's mistake, not a host without a GPU. A vendor runtime installed
// on the loader's path with no GPU behind it (Debian's HIP, installed by
// .ci/run's hip leg) stays loadable; Loadable says which are, so that a test
// can expect "no device" from that backend instead of "no driver".
//
// It skips t on a machine that shows a GPU's device nodes, where a driver
// would find a real device. /dev/nvidiactl alone is no GPU: libcuda, run as
// root, makes it on a host without one.
func NoGPUHost(t testing.TB) []string {
	t.Helper()
	for _, node := range []string{"/dev/nvidia0", "/dev/kfd", "/dev/dxg"} {
		if _, err := os.Stat(node); err == nil {
			t.Skipf("this machine has a GPU (%s): a host without one cannot be shown here", node)
		}
	}
	empty := t.TempDir()
	return []string{
		"GPUINIT_CUDA_LIBRARY=", "GPUINIT_HIP_LIBRARY=",
		"GPUINIT_DEV_ROOT=" + empty, "GPUINIT_SYSFS_ROOT=" + empty, "ROCM_PATH=" + empty,
	}
}

// Loadable reports whether the dynamic loader would find one of names for a
// process whose environment is os.Environ() with env after it: in a
// directory of its LD_LIBRARY_PATH, or in ldconfig's cache.
func Loadable(env []string, names ...string) bool {
	path := os.Getenv("LD_LIBRARY_PATH")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "LD_LIBRARY_PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		for _, name := range names {
			if _, err := os.Stat(filepath.Join(dir, name)); dir != "" && err == nil {
				return true
			}
		}
	}
	for _, line := range strings.Split(ldconfigCache(), "\n") {
		fields := strings.Fields(line)
		for _, name := range names {
			if len(fields) > 0 && fields[0] == name {
				return true
			}
		}
	}
	return false
}

// ldconfigCache is what ldconfig -p prints, read once a process: the tests
// ask on every run over a host with no GPU, and the cache does not change
// while they run.
var ldconfigCache = sync.OnceValue(func() string {
	ldconfig, err := exec.LookPath("ldconfig")
	if err != nil {
		ldconfig = "/sbin/ldconfig"
	}
	out, _ := exec.Command(ldconfig, "-p").Output()
	return string(out)
})

// NotInstalled is a bare library name for a GPUINIT_*_LIBRARY variable that
// the loader finds nowhere: a host where that library is not installed. A
// path that is not there would not do: it is a bad setting, refused at
// device.Open.
func NotInstalled(soname string) string { return "gpuinit-not-installed-" + soname }

// ShortWaits caps each event wait of the fake NVML and ROCm SMI at 20 ms,
// whatever the watch asked (1 s and 500 ms in production). A program that
// a test runs stops its watch as it exits, and waits for the wait in
// progress: without the cap, every run over the fakes would take up to a
// second more, on the wall clock. The fakes' logs still say what was asked.
var ShortWaits = []string{"GPUINIT_FAKE_NVML_WAIT_MAX_MS=20", "GPUINIT_FAKE_RSMI_WAIT_MAX_MS=20"}
