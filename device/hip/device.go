//go:build linux && cgo && !nohip

package hip

import (
	"fmt"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/host"
)

// Device reads one device's name and total memory from HIP, takes the PCI bus
// id Init read, and reads its gfx target (Arch, after HSA_OVERRIDE_GFX_VERSION
// or its per-device form; NativeArch, ArchSource and ArchWarning say what an
// override changed), UUID, compute units and integrated flag from the KFD
// topology, matched by PCI bus id. ComputeMajor and ComputeMinor stay zero: HIP reports
// gfx90a as 9.0, which reads as Hopper.
func (b *Backend) Device(ordinal int) (driver.Info, error) {
	s, err := checkOrdinal("Device", ordinal)
	if err != nil {
		return driver.Info{}, err
	}
	info := driver.Info{Ordinal: ordinal, PCIBusID: s.busIDs[ordinal]}
	var r int
	if info.Name, r = deviceGetName(ordinal); r != 0 {
		return driver.Info{}, check("hipDeviceGetName", r)
	}
	if info.TotalMemory, r = deviceTotalMem(ordinal); r != 0 {
		return driver.Info{}, check("hipDeviceTotalMem", r)
	}
	t := s.targets[ordinal]
	info.Arch = host.GfxArch(t.effective)
	if t.source != "" {
		info.NativeArch, info.ArchSource = host.GfxArch(t.native), t.source
		if t.native != 0 {
			info.ArchWarning = host.GfxOverrideWarning(t.native, t.effective)
		}
	}
	if node, ok := host.FindKFDNode(s.nodes, info.PCIBusID); ok {
		info.UUID = host.AMDUUID(node.UniqueID)
		info.Multiprocessors = node.ComputeUnits
		info.Integrated = node.Integrated
	}
	return info, nil
}

// PhysicalIndex reports libhsakmt's node id of device ordinal: what
// HSA_OVERRIDE_GFX_VERSION_<n> counts (CPU nodes included, so the first GPU
// is usually 1), found by PCI bus id.
func (*Backend) PhysicalIndex(ordinal int) (int, error) {
	s, err := checkOrdinal("PhysicalIndex", ordinal)
	if err != nil {
		return -1, err
	}
	ids, err := host.KFDNodeIDsHost()
	if err != nil {
		return -1, err
	}
	id, ok := ids[s.busIDs[ordinal]]
	if !ok {
		return -1, fmt.Errorf("hip: device %d (%s) has no libhsakmt node id: its KFD node was skipped", ordinal, s.busIDs[ordinal])
	}
	return id, nil
}
