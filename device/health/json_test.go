package health_test

import (
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/stretchr/testify/assert"
)

// TestErrorOfReportsAutosLeadWhole: the kind, call, code and hint of auto's
// combined error are all its lead's, the backend that got furthest.
func TestErrorOfReportsAutosLeadWhole(t *testing.T) {
	noLibrary := &device.DriverError{Backend: "cuda", Op: "dlopen", Message: "libcuda.so.1: not found",
		Hint: "install the NVIDIA driver", Sentinel: device.ErrDriverNotFound}
	noDevice := &device.DriverError{Backend: "hip", Op: "hipInit", Code: 100, Name: "hipErrorNoDevice",
		Hint: "check /dev/kfd", Sentinel: device.ErrNoDevice}
	mismatch := &device.DriverError{Backend: "hip", Op: "dlsym hipMalloc", Hint: "that file is not libamdhip64",
		Sentinel: device.ErrDriverMismatch}
	hung := &device.PreflightError{Backend: "hip", Hung: true}
	for _, tc := range []struct {
		name           string
		cuda, hip      error
		kind, op, hint string
	}{
		{"ROCm only: hip's driver answered", noLibrary, noDevice, "no-device", "hipInit", "check /dev/kfd"},
		{"a mismatched library beats a missing one", noLibrary, mismatch, "driver-mismatch", "dlsym hipMalloc", "that file is not libamdhip64"},
		{"neither library: the first tried", noLibrary, &device.DriverError{Backend: "hip", Op: "dlopen", Sentinel: device.ErrDriverNotFound},
			"no-driver", "dlopen", "install the NVIDIA driver"},
		{"a preflight child that hung leads a missing library", noLibrary, hung, "hang", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := &device.NoBackendError{Tried: []device.BackendFailure{{Backend: "cuda", Err: tc.cuda}, {Backend: "hip", Err: tc.hip}}}
			e := health.ErrorOf(err)
			assert.Equal(t, tc.kind, e.Kind)
			assert.Equal(t, tc.op, e.Op)
			assert.Equal(t, tc.hint, e.Hint, "never the other vendor's advice")
		})
	}
}

func TestDeviceHealthOfCarriesEveryField(t *testing.T) {
	h := device.DeviceHealth{Watched: true, Why: "why", Counted: map[string]int64{"xid 13": 1}, WatchError: "e",
		WatchErrors: 2, Hint: "hint", UnwatchedCalls: 3}
	assert.Equal(t, &health.DeviceHealth{Watched: true, Why: "why", Counted: map[string]int64{"xid 13": 1}, WatchError: "e",
		WatchErrors: 2, Hint: "hint", UnwatchedCalls: 3}, health.DeviceHealthOf(h))
}
