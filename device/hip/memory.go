//go:build linux && cgo && !nohip

package hip

import (
	"fmt"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/internal/kfd"
)

// MemoryInfo reads device ordinal's free and total VRAM from amdgpu's sysfs
// counters (mem_info_vram_total, mem_info_vram_used) of the PCI device with
// the device's bus id: no HIP call, so nothing is created or allocated. Where
// sysfs has no counters for it, the error wraps device.ErrNotSupported. For an
// integrated GPU the counters cover its VRAM carve-out, not system memory.
func (b *Backend) MemoryInfo(ordinal int) (free, total uint64, err error) {
	if err := checkOrdinal("MemoryInfo", ordinal); err != nil {
		return 0, 0, err
	}
	busID := runtime.busIDs[ordinal]
	total, used, err := kfd.VRAM(kfd.Root(), busID)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: hip: device %d (%s) has no amdgpu VRAM counters in sysfs: %w", device.ErrNotSupported, ordinal, busID, err)
	}
	return total - min(used, total), total, nil
}

// Do runs fn on a locked OS thread with device ordinal current (hipSetDevice)
// and restores the thread's previous device afterwards, even if fn panics (the
// panic goes on).
func (b *Backend) Do(ordinal int, fn func() error) error {
	if err := checkOrdinal("hipSetDevice", ordinal); err != nil {
		return err
	}
	return onDevice(ordinal, fn)
}
