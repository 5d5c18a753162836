//go:build linux && cgo && !nocuda

package cuda

import (
	"fmt"

	"github.com/gpuinit/gpuinit/device/driver"
)

// MemoryInfo reads device ordinal's free and total memory without creating a
// context or allocating anything: through NVML (libnvidia-ml.so.1, loaded at
// the first call), matching the device by UUID or PCI bus id, never by index;
// else through cuMemGetInfo_v2, only if the device's primary context is
// already active (the thread's own context is saved and restored in the same
// C call). One narrow window remains: if another thread releases the
// context's last reference between the state check and the retain that finds
// its handle, that retain recreates it, and the release right after destroys
// it again. Otherwise the error wraps driver.ErrNotSupported and says why. It
// is safe from many goroutines. Through NVML it allocates nothing after the
// first call per device; the driver path allocates a few bytes per call.
func (b *Backend) MemoryInfo(ordinal int) (free, total uint64, err error) {
	if err := checkOrdinal("cuMemGetInfo_v2", ordinal); err != nil {
		return 0, 0, err
	}
	handles, nvmlErr := loadNVML()
	if nvmlErr == nil {
		if free, total, nvmlErr = nvmlMemory(handles, ordinal); nvmlErr == nil {
			return free, total, nil
		}
	}
	dev, r := api.deviceGet(ordinal)
	if err := check("cuDeviceGet", r); err != nil {
		return 0, 0, err
	}
	free, total, active, r := memInfoIfActive(dev)
	if err := check("cuMemGetInfo_v2", r); err != nil {
		return 0, 0, err
	}
	if !active {
		return 0, 0, fmt.Errorf("%w: cuda: device %d's free memory cannot be read without side effects: NVML: %v; and its primary context is not active, and gpuinit never creates one (hundreds of MiB of VRAM) just to read memory",
			driver.ErrNotSupported, ordinal, nvmlErr)
	}
	return free, total, nil
}
