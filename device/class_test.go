package device_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device/devicetest"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEveryInitializationFailureHasOneClass(t *testing.T) {
	cuda := func(op string, code int) error { return drivercodes.CUDA.Error(op, code, "", "") }
	hip := func(op string, code int) error { return drivercodes.HIPError(op, code, "", "") }
	for _, tc := range []struct {
		name string
		err  error
		want device.Class
	}{
		{"not compiled in", fmt.Errorf("%w: built without cgo", device.ErrNotCompiled), device.ClassNoGPUHere},
		{"no driver library", &device.DriverError{Backend: "cuda", Op: "dlopen", Sentinel: device.ErrDriverNotFound}, device.ClassNoGPUHere},
		{"the toolkit's stub", cuda("cuDriverGetVersion", 34), device.ClassNoGPUHere},
		{"a library file the user named that is not there", &device.DriverError{Backend: "cuda", Op: "dlopen GPUINIT_CUDA_LIBRARY", Sentinel: device.ErrDriverNotFound}, device.ClassNeedsOperator},
		{"a second copy beside the loaded one", &device.DriverError{Backend: "cuda", Op: "dlopen GPUINIT_CUDA_LIBRARY", Sentinel: device.ErrDriverMismatch}, device.ClassNeedsOperator},
		{"a library found whose dependency is missing", &device.DriverError{Backend: "hip", Op: "dlopen", Sentinel: device.ErrDriverMismatch}, device.ClassNeedsOperator},
		{"a missing symbol", &device.DriverError{Backend: "cuda", Op: "dlsym cuDeviceTotalMem_v2", Sentinel: device.ErrDriverMismatch}, device.ClassNoGPUHere},
		{"a negative device count", &device.DriverError{Backend: "cuda", Op: "cuDeviceGetCount", Sentinel: device.ErrDriverMismatch}, device.ClassNoGPUHere},
		{"a driver below the floor", &device.DriverError{Backend: "cuda", Op: "DriverVersion", Sentinel: driver.ErrDriverTooOld}, device.ClassNoGPUHere},
		{"CUDA 35, insufficient driver", cuda("cuInit", 35), device.ClassNoGPUHere},
		{"no device (no device nodes seen)", cuda("cuInit", 100), device.ClassNoGPUHere},
		{"HIP's 101 from hipInit", hip("hipInit", 101), device.ClassNoGPUHere},
		{"802, the fabric manager starting", cuda("cuInit", 802), device.ClassNotYet},
		{"a hung preflight child", &device.PreflightError{Hung: true}, device.ClassNotYet},
		{"a crashed preflight child", &device.PreflightError{Signal: "SIGSEGV"}, device.ClassNotYet},
		{"a preflight child's Go panic", &device.PreflightError{Panicked: true, ExitCode: 2}, device.ClassNeedsOperator},
		{"a Go panic that GOTRACEBACK=crash ended with SIGABRT", &device.PreflightError{Panicked: true, Signal: "SIGABRT"}, device.ClassNeedsOperator},
		{"a child that is no preflight server", &device.PreflightError{NoReport: true}, device.ClassNeedsOperator},
		{"803, user and kernel driver differ", cuda("cuInit", 803), device.ClassNeedsOperator},
		{"804, forward compatibility", cuda("cuInit", 804), device.ClassNeedsOperator},
		{"999 after suspend/resume", cuda("cuInit", 999), device.ClassNeedsOperator},
		{"800, not permitted", cuda("cuInit", 800), device.ClassNeedsOperator},
		{"a panic in the driver's init", &lazy.InitError{Err: &lazy.PanicError{Value: "boom"}}, device.ClassNeedsOperator},
		{"a queued call that failed", &lazy.DeferredError{Site: "x.go:1", Err: errors.New("bad seed")}, device.ClassNeedsOperator},
		{"wrapped by lazy", &lazy.InitError{Err: cuda("cuInit", 802)}, device.ClassNotYet},
		{"nil", nil, device.ClassNone},
		{"closed", &lazy.InitError{Err: device.ErrClosed}, device.ClassNone},
		{"a caller that stopped waiting", fmt.Errorf("lazy: stopped waiting: %w", context.Canceled), device.ClassNone},
		{"a bad ordinal on a ready runtime", fmt.Errorf("%w: 9", device.ErrInvalidDevice), device.ClassNone},
		{"a lost device", device.LostDevice{Err: drivercodes.CUDA.Error("cuLaunchKernel", 700, "", "")}, device.ClassNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, device.ClassOf(tc.err), "%v", tc.err)
			assert.Equal(t, tc.want != device.ClassNone, (device.ClassOf(tc.err) != device.ClassNone))
			assert.Equal(t, tc.want == device.ClassNoGPUHere, device.FallBackToCPU(tc.err), "fall back to the CPU only where there is no GPU")
		})
	}
}

func TestAutosClassIsItsMostHopefulBackends(t *testing.T) {
	noDriver := &device.DriverError{Backend: "cuda", Op: "dlopen", Sentinel: device.ErrDriverNotFound}
	mismatch := drivercodes.CUDA.Error("cuInit", 803, "", "")
	notReady := drivercodes.CUDA.Error("cuInit", 802, "", "")
	tried := func(errs ...error) error {
		nb := &device.NoBackendError{}
		for i, err := range errs {
			nb.Tried = append(nb.Tried, device.BackendFailure{Backend: fmt.Sprint(i), Err: err})
		}
		return &lazy.InitError{Err: nb}
	}
	assert.Equal(t, device.ClassNoGPUHere, device.ClassOf(tried(noDriver, noDriver)))
	assert.Equal(t, device.ClassNeedsOperator, device.ClassOf(tried(noDriver, mismatch)), "a GPU is there, broken")
	assert.Equal(t, device.ClassNotYet, device.ClassOf(tried(mismatch, notReady)), "one may yet come up")
}

func TestClassNames(t *testing.T) {
	for c, want := range map[device.Class]string{device.ClassNoGPUHere: "no-gpu", device.ClassNotYet: "not-yet",
		device.ClassNeedsOperator: "needs-operator", device.ClassNone: ""} {
		assert.Equal(t, want, c.String())
		assert.Equal(t, want == "", c.Describe() == "")
	}
}

func TestANoDeviceFailureIsClassedByWhatTheHostShows(t *testing.T) {
	cuda, rocm := driver.VisibilityCUDA, driver.VisibilityROCm
	for _, tc := range []struct {
		name     string
		family   driver.Visibility
		present  bool
		evidence string
		env      map[string]string // the visibility variables set; the others are unset
		want     device.Class
		says     string
		nodes    int // the /dev/nvidiaN nodes the host shows, which NoDevice counts
	}{
		{"a device node, the driver not up yet", cuda, true, "/dev/x0 exists", nil, device.ClassNotYet, "(not-yet: /dev/x0 exists, so the GPU may not be ready yet)", 0},
		{"no device node given (a container given no GPU)", cuda, false, "no /dev/x0 device node", nil, device.ClassNoGPUHere, "(no-gpu: no /dev/x0 device node)", 0},
		{"every GPU hidden on purpose, -1", cuda, true, "/dev/x0 exists", map[string]string{"CUDA_VISIBLE_DEVICES": "-1"}, device.ClassNoGPUHere, `(no-gpu: CUDA_VISIBLE_DEVICES="-1" hides every GPU)`, 0},
		{"every GPU hidden on purpose, empty", cuda, true, "/dev/x0 exists", map[string]string{"CUDA_VISIBLE_DEVICES": ""}, device.ClassNoGPUHere, `(no-gpu: CUDA_VISIBLE_DEVICES="" hides every GPU)`, 0},
		{"GPUs chosen, the driver not up yet", cuda, true, "/dev/x0 exists", map[string]string{"CUDA_VISIBLE_DEVICES": "0"}, device.ClassNotYet, "so the GPU may not be ready yet", 0},
		{"ROCm: /dev/kfd, every GPU hidden by HIP_VISIBLE_DEVICES=-1", rocm, true, "/dev/kfd exists", map[string]string{"HIP_VISIBLE_DEVICES": "-1"}, device.ClassNoGPUHere, `(no-gpu: HIP_VISIBLE_DEVICES="-1" hides every GPU)`, 0},
		{"ROCm: /dev/kfd, every GPU hidden by an empty ROCR_VISIBLE_DEVICES", rocm, true, "/dev/kfd exists", map[string]string{"ROCR_VISIBLE_DEVICES": ""}, device.ClassNoGPUHere, `(no-gpu: ROCR_VISIBLE_DEVICES="" hides every GPU)`, 0},
		{"ROCm: /dev/kfd, HIP_VISIBLE_DEVICES chooses over CUDA_VISIBLE_DEVICES=-1", rocm, true, "/dev/kfd exists",
			map[string]string{"HIP_VISIBLE_DEVICES": "0", "CUDA_VISIBLE_DEVICES": "-1"}, device.ClassNotYet, "(not-yet: /dev/kfd exists, so the GPU may not be ready yet)", 0},
		// Lists that leave the driver no device, as it reads them, whatever
		// the host's devices: no wait changes them.
		{"a repeat empties CUDA's list, 0,0", cuda, true, "/dev/x0 exists", map[string]string{"CUDA_VISIBLE_DEVICES": "0,0"}, device.ClassNoGPUHere, `(no-gpu: CUDA_VISIBLE_DEVICES="0,0" hides every GPU)`, 0},
		{"a negative first index, -2", cuda, true, "/dev/x0 exists", map[string]string{"CUDA_VISIBLE_DEVICES": "-2"}, device.ClassNoGPUHere, `(no-gpu: CUDA_VISIBLE_DEVICES="-2" hides every GPU)`, 0},
		{"a name CUDA does not read, gpu0", cuda, true, "/dev/x0 exists", map[string]string{"CUDA_VISIBLE_DEVICES": "gpu0"}, device.ClassNoGPUHere, `(no-gpu: CUDA_VISIBLE_DEVICES="gpu0" hides every GPU)`, 0},
		{"GPU-, ambiguous on a host of two GPUs", cuda, true, "/dev/x0 exists", map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-"}, device.ClassNoGPUHere, `(no-gpu: CUDA_VISIBLE_DEVICES="GPU-" hides every GPU)`, 2},
		{"MIG- and no UUID, MIG-unknown", cuda, true, "/dev/x0 exists", map[string]string{"CUDA_VISIBLE_DEVICES": "MIG-unknown"}, device.ClassNoGPUHere, `(no-gpu: CUDA_VISIBLE_DEVICES="MIG-unknown" hides every GPU)`, 0},
		{"MIG- and a GPU UUID no GPU can have", cuda, true, "/dev/x0 exists", map[string]string{"CUDA_VISIBLE_DEVICES": "MIG-GPU-unknown/1/0"}, device.ClassNoGPUHere, `(no-gpu: CUDA_VISIBLE_DEVICES="MIG-GPU-unknown/1/0" hides every GPU)`, 0},
		{"ROCm: HIP_VISIBLE_DEVICES=-2", rocm, true, "/dev/kfd exists", map[string]string{"HIP_VISIBLE_DEVICES": "-2"}, device.ClassNoGPUHere, `(no-gpu: HIP_VISIBLE_DEVICES="-2" hides every GPU)`, 0},
		{"ROCm: HIP_VISIBLE_DEVICES=gpu0", rocm, true, "/dev/kfd exists", map[string]string{"HIP_VISIBLE_DEVICES": "gpu0"}, device.ClassNoGPUHere, `(no-gpu: HIP_VISIBLE_DEVICES="gpu0" hides every GPU)`, 0},
		{"ROCm: HIP_VISIBLE_DEVICES=GPU-zz, no AMD UUID", rocm, true, "/dev/kfd exists", map[string]string{"HIP_VISIBLE_DEVICES": "GPU-zz"}, device.ClassNoGPUHere, `(no-gpu: HIP_VISIBLE_DEVICES="GPU-zz" hides every GPU)`, 0},
		{"ROCm: ROCR_VISIBLE_DEVICES=GPU-, too short for ROCr", rocm, true, "/dev/kfd exists", map[string]string{"ROCR_VISIBLE_DEVICES": "GPU-"}, device.ClassNoGPUHere, `(no-gpu: ROCR_VISIBLE_DEVICES="GPU-" hides every GPU)`, 0},
		{"ROCm: ROCR_VISIBLE_DEVICES=gpu0", rocm, true, "/dev/kfd exists", map[string]string{"ROCR_VISIBLE_DEVICES": "gpu0"}, device.ClassNoGPUHere, `(no-gpu: ROCR_VISIBLE_DEVICES="gpu0" hides every GPU)`, 0},
		{"ROCm: ROCR_VISIBLE_DEVICES=-2", rocm, true, "/dev/kfd exists", map[string]string{"ROCR_VISIBLE_DEVICES": "-2"}, device.ClassNoGPUHere, `(no-gpu: ROCR_VISIBLE_DEVICES="-2" hides every GPU)`, 0},
		{"ROCm: CUDA_VISIBLE_DEVICES=-2 as HIP reads it", rocm, true, "/dev/kfd exists", map[string]string{"CUDA_VISIBLE_DEVICES": "-2"}, device.ClassNoGPUHere, `(no-gpu: CUDA_VISIBLE_DEVICES="-2" hides every GPU)`, 0},
		// Lists that may leave the driver a device: its answer may change.
		{"GPU- on a host of one GPU names it", cuda, true, "/dev/x0 exists", map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-"}, device.ClassNotYet, "so the GPU may not be ready yet", 1},
		{"a well-formed MIG UUID: only the devices settle it", cuda, true, "/dev/x0 exists", map[string]string{"CUDA_VISIBLE_DEVICES": "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f"}, device.ClassNotYet, "so the GPU may not be ready yet", 0},
		{"ROCm: HIP skips a repeat, 0,0", rocm, true, "/dev/kfd exists", map[string]string{"HIP_VISIBLE_DEVICES": "0,0"}, device.ClassNotYet, "so the GPU may not be ready yet", 0},
		{"ROCm: HIP does not read GPU_DEVICE_ORDINAL", rocm, true, "/dev/kfd exists", map[string]string{"GPU_DEVICE_ORDINAL": "-1"}, device.ClassNotYet, "so the GPU may not be ready yet", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range append(append([]string{"GPU_DEVICE_ORDINAL"}, drivercodes.CUDAHiding.Vars...), drivercodes.HIPHiding.Vars...) {
				t.Setenv(name, "")
				require.NoError(t, os.Unsetenv(name))
			}
			dev := t.TempDir() // the /dev/nvidiaN nodes NoDevice counts
			for i := range tc.nodes {
				require.NoError(t, os.WriteFile(filepath.Join(dev, fmt.Sprintf("nvidia%d", i)), nil, 0o644))
			}
			t.Setenv("GPUINIT_DEV_ROOT", dev)
			for name, value := range tc.env {
				t.Setenv(name, value)
			}
			var g device.Registry
			g.Register(driver.Registration{Name: "gpu", GPU: true, Visibility: tc.family,
				Present: func() (bool, string) { return tc.present, tc.evidence },
				Open:    func() (driver.Backend, error) { return fakeGPU{sim.New(sim.WithFailure(sim.NoDevice)), "gpu"}, nil }})
			err := openIn(t, &g, "gpu").Init(context.Background())
			assert.Equal(t, tc.want, device.ClassOf(err), "%v", err)
			assert.ErrorContains(t, err, tc.says)
		})
	}
}

func TestNotReadyIsNotYetWhateverTheHostShows(t *testing.T) {
	t.Setenv("CUDA_VISIBLE_DEVICES", "-1")
	var g device.Registry
	g.Register(driver.Registration{Name: "gpu", GPU: true, Visibility: driver.VisibilityCUDA,
		Present: func() (bool, string) { return false, "no node" },
		Open:    func() (driver.Backend, error) { return fakeGPU{sim.New(sim.WithFailure(sim.NotReady)), "gpu"}, nil }})
	err := openIn(t, &g, "gpu").Init(context.Background())
	assert.Equal(t, device.ClassNotYet, device.ClassOf(err), "%v", err)
}

func TestNoDeviceIsNotYetOnlyWhereTheDeviceNodesExist(t *testing.T) {
	for _, present := range []bool{false, true} {
		t.Run(fmt.Sprint("device nodes: ", present), func(t *testing.T) {
			rt, _ := preflighted(t, present, device.Preflight{RetryFor: 50 * time.Millisecond, Backoff: 20 * time.Millisecond})
			device.RetryClockOfWaits(t) // one wait, then a second child, however slow they are
			t.Setenv(sim.EnvFail, string(sim.NoDevice))
			err := rt.Init(context.Background())
			require.ErrorIs(t, err, device.ErrNoDevice)
			if !present {
				assert.Equal(t, device.ClassNoGPUHere, device.ClassOf(err))
				assert.Equal(t, 1, rt.Stats().BringUp.Attempts, "no GPU here: not retried")
				return
			}
			assert.Equal(t, device.ClassNotYet, device.ClassOf(err))
			assert.Greater(t, rt.Stats().BringUp.Attempts, 1)
			assert.ErrorContains(t, err, "/dev/fakegpu0 exists")
		})
	}
}

// TestAChildWithoutTheBackendIsNeverTakenAsNoGPU: a backend this process
// has, in a registry of its own, that the default child's DefaultRegistry
// lacks, gets "not compiled" from the child; the parent refuses that answer
// as the truth about the host, and says what to do.
func TestAChildWithoutTheBackendIsNeverTakenAsNoGPU(t *testing.T) {
	var g device.Registry
	c := &devicetest.Counting{Backend: fakeGPU{sim.New(), "gpu2"}}
	g.Register(driver.Registration{Name: "gpu2", GPU: true, Open: func() (driver.Backend, error) { return c, nil }})
	rt := openIn(t, &g, "gpu2")
	require.NoError(t, rt.UsePreflight(device.Preflight{Command: []string{os.Args[0], "-test.run=^$"}}))
	t.Setenv("GPUINIT_PREFLIGHT", "")
	err := rt.Init(context.Background())
	require.Error(t, err)
	assert.Equal(t, device.ClassNeedsOperator, device.ClassOf(err), "%v", err)
	assert.NotErrorIs(t, err, device.ErrNotCompiled)
	assert.ErrorContains(t, err, "the preflight child has no gpu2 backend, which this process has")
	assert.Equal(t, 1, rt.Stats().BringUp.Attempts, "the child's answer is not retried")
	assert.Zero(t, c.Calls().Init, "nothing initialized in this process")
}
