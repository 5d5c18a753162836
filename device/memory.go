package device

import (
	"context"
	"fmt"

	"github.com/gpuinit/gpuinit/device/driver"
)

// Memory initializes on first use and reports device ordinal's free and
// total memory in bytes, read live. It also says where the figures came
// from ([driver.MemorySource]). It never creates a context and never
// allocates device memory.
//
// CUDA reads NVML, or the driver where the device's primary context is
// already active. A MIG instance reads its own slice, by its UUID. HIP reads
// amdgpu's sysfs VRAM counters. For an APU it reads the GTT pool, or the
// host's MemAvailable and MemTotal where those bind. A GPU that shares the
// host's memory (Jetson, GB10) reports the host's MemAvailable and MemTotal.
// NVML reports the host's RAM as its free memory there, or nothing, and
// cudaMemGetInfo tracks MemFree, which the page cache eats. While CUDA's
// integrated attribute cannot be read, such a GPU's memory is unknown.
// Where no source gives a true figure, the error wraps [ErrNotSupported] and
// says why. The answer is "unknown", never a wrong number.
//
// A lost device's read is refused with its [LostDevice], which wraps
// [ErrDeviceLost], without a call into the driver. Memory is safe for
// concurrent use. Only the first call per device allocates. The backend's
// read runs under the call deadline, as Do's function does. A read that
// panics releases its watch as it unwinds.
// A nil ctx panics, naming Memory.
func (r *Runtime) Memory(ctx context.Context, ordinal int) (driver.Memory, error) {
	nilContext(ctx, "Memory")
	return r.memory(ctx, ordinal)
}

func (r *Runtime) memory(ctx context.Context, ordinal int) (driver.Memory, error) {
	if err := r.Init(ctx); err != nil {
		return driver.Memory{}, err
	}
	if err := r.checkOrdinal(ordinal); err != nil {
		return driver.Memory{}, err
	}
	b := r.Backend()
	read := func() (driver.Memory, error) {
		if mr, ok := driver.Capability[driver.MemoryReader](b); ok {
			return mr.ReadMemory(ordinal)
		}
		mr, ok := driver.Capability[driver.MemoryReporter](b)
		if !ok {
			return driver.Memory{}, fmt.Errorf("device: backend %s cannot read free memory: %w", r.Name(), ErrNotSupported)
		}
		free, total, err := mr.MemoryInfo(ordinal)
		return driver.Memory{Free: free, Total: total}, err
	}
	// As with Do's function, a lost device refuses the read. The slot is
	// released however the read ends, a panic included.
	var m driver.Memory
	err := r.watched(ordinal, &opMemoryInfo, func() (err error) {
		m, err = read()
		return err
	})
	return m, err
}
