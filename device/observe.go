package device

import (
	"context"
	"fmt"
	"maps"
	"os"

	"github.com/gpuinit/gpuinit/device/driver"
)

// MemoryInfo initializes on first use and reports device ordinal's free and
// total memory in bytes, read live. It never creates a context and never
// allocates device memory: CUDA reads NVML (or the driver, where the device's
// primary context is already active), HIP reads amdgpu's sysfs counters. A
// backend that cannot gets an error wrapping ErrNotSupported that says why.
// It is safe from many goroutines. The backend's read runs under the call
// deadline, as Do's function does (the driver's fallback, on CUDA, is a call
// into the device's context).
// A nil ctx panics, naming MemoryInfo.
func (r *Runtime) MemoryInfo(ctx context.Context, ordinal int) (free, total uint64, err error) {
	nilContext(ctx, "MemoryInfo")
	if err := r.init.Init(ctx); err != nil {
		return 0, 0, err
	}
	if err := r.CheckOrdinal(ordinal); err != nil {
		return 0, 0, err
	}
	mr, ok := driver.Capability[driver.MemoryReporter](r.Backend())
	if !ok {
		return 0, 0, fmt.Errorf("%w: backend %s cannot read free memory", ErrNotSupported, r.Name())
	}
	w := r.calls.Load()
	var s *callSlot
	if w != nil {
		s = w.begin(ordinal, &opMemoryInfo)
	}
	free, total, err = mr.MemoryInfo(ordinal)
	w.end(s)
	return free, total, err
}

// VisibilityVariables are the environment variables that choose which GPUs a
// process sees, and how they are numbered or targeted.
var VisibilityVariables = []string{
	"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
	"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "HSA_OVERRIDE_GFX_VERSION",
}

// Visibility reports the VisibilityVariables that were set when the Runtime
// initialized, with their values (an empty value is reported: it hides every
// device), in a map of the caller's, or nil before initialization. Ordinals
// stay the driver's, which are what the server passes back to it; these say
// how the driver numbered them.
func (r *Runtime) Visibility() map[string]string {
	if v := r.visibility.Load(); v != nil {
		return maps.Clone(*v)
	}
	return nil
}

func readVisibility() map[string]string {
	seen := map[string]string{}
	for _, name := range VisibilityVariables {
		if v, ok := os.LookupEnv(name); ok {
			seen[name] = v
		}
	}
	return seen
}
