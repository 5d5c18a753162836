//go:build linux && cgo && !nocuda

package cuda

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/host"
)

// MemoryInfo is ReadMemory's figures.
func (b *Backend) MemoryInfo(ordinal int) (free, total uint64, err error) {
	m, err := b.ReadMemory(ordinal)
	return m.Free, m.Total, err
}

// ReadMemory reads device ordinal's free and total memory without creating a
// context or allocating anything, and says where they came from:
//   - an integrated GPU (Jetson, GB10: CU_DEVICE_ATTRIBUTE_INTEGRATED) shares
//     the host's memory, so the figures are the host's MemAvailable and
//     MemTotal from /proc/meminfo (driver.MemoryHost): NVML there reports
//     the host's RAM as if it were free VRAM, or nothing, and cudaMemGetInfo
//     tracks MemFree, which page cache eats;
//   - else NVML (libnvidia-ml.so.1, loaded at the first call), matching the
//     device by UUID (a MIG instance's own handle, so its slice) or PCI bus
//     id, never by index (driver.MemoryNVML);
//   - else cuMemGetInfo_v2, only if the device's primary context is already
//     active (the thread's own context is saved and restored in the same C
//     call; driver.MemoryDriverContext). One narrow window remains: if
//     another thread releases the context's last reference between the
//     state check and the retain that finds its handle, that retain
//     recreates it, and the release right after destroys it again.
//
// Otherwise the error wraps driver.ErrNotSupported and says why: unknown, never
// a wrong number. That includes a device while its integrated attribute
// cannot be read, since NVML's figure is wrong for an integrated one. It is safe from many goroutines. Through NVML or meminfo it allocates
// nothing after the first call per device; the driver path allocates a few
// bytes per call.
func (b *Backend) ReadMemory(ordinal int) (driver.Memory, error) {
	if err := checkOrdinal("cuMemGetInfo_v2", ordinal); err != nil {
		return driver.Memory{}, err
	}
	integrated, err := integratedDevice(ordinal)
	if err != nil {
		// Not knowing is not "discrete": on an integrated GPU (GB10) NVML
		// would answer with the host's RAM as if it were free VRAM.
		return driver.Memory{}, drivercodes.Unusable("cuda", fmt.Sprintf("device %d's free memory is unknown: whether it shares the host's memory (integrated) could not be read, and NVML's figure for such a device is wrong", ordinal),
			err, driver.ErrNotSupported)
	}
	if integrated {
		avail, total, err := host.ReadMemory()
		if err != nil {
			return driver.Memory{}, drivercodes.Unusable("cuda", fmt.Sprintf("device %d shares the host's memory, whose available figure is unknown", ordinal), err, driver.ErrNotSupported)
		}
		return driver.Memory{Free: avail, Total: total, Source: driver.MemoryHost}, nil
	}
	handles, nvmlErr := loadNVML()
	if nvmlErr == nil {
		free, total, err := nvmlMemory(handles, ordinal)
		if err == nil {
			return driver.Memory{Free: free, Total: total, Source: driver.MemoryNVML}, nil
		}
		nvmlErr = err
	}
	dev, r := api.deviceGet(ordinal)
	if err := check("cuDeviceGet", r); err != nil {
		return driver.Memory{}, err
	}
	free, total, active, r := memInfoIfActive(dev)
	if err := check("cuMemGetInfo_v2", r); err != nil {
		return driver.Memory{}, err
	}
	if !active {
		return driver.Memory{}, fmt.Errorf("cuda: device %d's free memory is unknown: it cannot be read without side effects: NVML: %v; and its primary context is not active, and gpuinit never creates one (hundreds of MiB of VRAM) just to read memory: %w",
			ordinal, nvmlErr, driver.ErrNotSupported)
	}
	return driver.Memory{Free: free, Total: total, Source: driver.MemoryDriverContext}, nil
}

// sharesHostMemory holds each device's CU_DEVICE_ATTRIBUTE_INTEGRATED once
// read: 0 while unknown, 1 discrete, 2 integrated. It is made once, after
// Init has counted the devices.
var sharesHostMemory = sync.OnceValue(func() []atomic.Int32 { return make([]atomic.Int32, state.count.Load()) })

// integratedDevice reports whether device ordinal shares the host's memory,
// read at its first memory read and kept. A failed read is not kept, unlike
// once.OnceValue's: the device's memory is unknown while its attribute cannot be
// read, not for the rest of the process, and no other device's is. Callers
// that race on the first read each read; the answers are the same.
func integratedDevice(ordinal int) (bool, error) {
	known := sharesHostMemory()
	if ordinal >= len(known) {
		return false, fmt.Errorf("cuda: device %d is not among the %d counted at Init", ordinal, len(known))
	}
	switch known[ordinal].Load() {
	case 1:
		return false, nil
	case 2:
		return true, nil
	}
	dev, r := api.deviceGet(ordinal)
	if err := check("cuDeviceGet", r); err != nil {
		return false, err
	}
	v, r := api.deviceGetAttribute(attrIntegrated, dev)
	if err := check("cuDeviceGetAttribute(18)", r); err != nil {
		return false, err
	}
	if v != 0 {
		known[ordinal].Store(2)
		return true, nil
	}
	known[ordinal].Store(1)
	return false, nil
}
