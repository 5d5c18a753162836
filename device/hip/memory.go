//go:build linux && cgo && !nohip

package hip

import (
	"fmt"
	"path/filepath"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/host"
)

// memoryPaths are a device's amdgpu memory counters in sysfs, NUL-terminated
// for allocation-free reads: VRAM for a discrete GPU, GTT for an APU.
type memoryPaths struct {
	apu         bool
	total, used []byte
}

func pathsFor(busID string, apu bool) memoryPaths {
	dir := filepath.Join(host.Sys(), "bus/pci/devices", busID)
	kind := "vram"
	if apu {
		kind = "gtt"
	}
	return memoryPaths{apu: apu, total: host.CounterPath(filepath.Join(dir, "mem_info_"+kind+"_total")),
		used: host.CounterPath(filepath.Join(dir, "mem_info_"+kind+"_used"))}
}

// MemoryInfo is ReadMemory's figures.
func (b *Backend) MemoryInfo(ordinal int) (free, total uint64, err error) {
	m, err := b.ReadMemory(ordinal)
	return m.Free, m.Total, err
}

// ReadMemory reads device ordinal's free and total memory from amdgpu's sysfs
// counters of the PCI device with the device's bus id, and says where they
// came from: no HIP call, so nothing is created or allocated, and nothing
// allocated in Go after Init either. A discrete GPU's are its VRAM
// (mem_info_vram_total, _used; driver.MemoryAMDVRAM). An APU (a KFD node with
// both CPU cores and SIMDs) computes in GTT, the host memory the driver maps
// for it (mem_info_gtt_*; its VRAM is a small carve-out): its figures are
// GTT's (driver.MemoryAMDGTT), unless the host has less available
// (/proc/meminfo's MemAvailable) than GTT has free. The host's figures then
// bind, and both are the host's: Free is MemAvailable and Total MemTotal
// (driver.MemoryHost, as for an integrated NVIDIA GPU), so that Total less
// Free is memory in use by one accounting, never GTT's size less the host's
// headroom. Total therefore changes with the source; the device's fixed size
// is Info.TotalMemory. Where sysfs has no counters for it, the error wraps
// driver.ErrNotSupported: unknown.
func (b *Backend) ReadMemory(ordinal int) (driver.Memory, error) {
	s, err := checkOrdinal("MemoryInfo", ordinal)
	if err != nil {
		return driver.Memory{}, err
	}
	p := s.memory[ordinal]
	total, err := host.ReadCounter(p.total)
	var used uint64
	if err == nil {
		used, err = host.ReadCounter(p.used)
	}
	if err != nil {
		return driver.Memory{}, drivercodes.Unusable("hip", fmt.Sprintf("device %d (%s) has no amdgpu memory counters in sysfs, so its free memory is unknown", ordinal, s.busIDs[ordinal]),
			err, driver.ErrNotSupported)
	}
	m := driver.Memory{Free: total - min(used, total), Total: total, Source: driver.MemoryAMDVRAM}
	if p.apu {
		m.Source = driver.MemoryAMDGTT
		if avail, hostTotal, err := host.ReadMemory(); err == nil && avail < m.Free {
			m = driver.Memory{Free: avail, Total: hostTotal, Source: driver.MemoryHost}
		}
	}
	return m, nil
}
