//go:build linux && cgo && !nohip

package hip

import (
	"fmt"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/kfd"
)

// MemoryInfo reads device ordinal's free and total VRAM from amdgpu's sysfs
// counters (mem_info_vram_total, mem_info_vram_used) of the PCI device with
// the device's bus id: no HIP call, so nothing is created or allocated. Where
// sysfs has no counters for it, the error wraps driver.ErrNotSupported. For an
// integrated GPU the counters cover its VRAM carve-out, not system memory.
func (b *Backend) MemoryInfo(ordinal int) (free, total uint64, err error) {
	s, err := checkOrdinal("MemoryInfo", ordinal)
	if err != nil {
		return 0, 0, err
	}
	busID := s.busIDs[ordinal]
	total, used, err := kfd.VRAM(kfd.Root(), busID)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: hip: device %d (%s) has no amdgpu VRAM counters in sysfs: %w", driver.ErrNotSupported, ordinal, busID, err)
	}
	return total - min(used, total), total, nil
}
