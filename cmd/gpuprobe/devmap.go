package main

import (
	"fmt"
	"io"

	"github.com/gpuinit/gpuinit/device"
)

// deviceMap is device.DeviceMap in the report: how the runtime's ordinals map
// to the host's GPUs as the vendor's tools name them, under the visibility
// variables read at init.
type deviceMap struct {
	Order   string         `json:"order,omitempty"` // CUDA_DEVICE_ORDER as applied: FASTEST_FIRST or PCI_BUS_ID; "" off CUDA
	Devices []mappedDevice `json:"devices"`
	Warning string         `json:"warning,omitempty"` // the runtime's order is not the vendor tool's
}

type mappedDevice struct {
	Ordinal  int    `json:"ordinal"`
	Index    int    `json:"index"` // nvidia-smi's GPU number (cuda), the KFD node id (hip); -1 where unknown
	UUID     string `json:"uuid"`
	PCIBusID string `json:"pci_bus_id"`
	Selected string `json:"selected,omitempty"` // the visibility entry that made it visible
}

func deviceMapOf(m device.DeviceMap) *deviceMap {
	out := &deviceMap{Order: m.Order, Warning: m.Warning, Devices: []mappedDevice{}}
	for _, d := range m.Devices {
		out.Devices = append(out.Devices, mappedDevice{Ordinal: d.Ordinal, Index: d.Index, UUID: d.UUID, PCIBusID: d.PCIBusID, Selected: d.Selected})
	}
	return out
}

// writeDeviceMap prints one line per device, ordinal first, then its
// warning:
//
//	device map  order FASTEST_FIRST
//	  0  index 1   GPU-f12e…  0000:18:00.0  CUDA_VISIBLE_DEVICES entry 0: GPU-f12e
func writeDeviceMap(w io.Writer, m *deviceMap) {
	if m == nil {
		return
	}
	fmt.Fprint(w, "device map")
	if m.Order != "" {
		fmt.Fprintf(w, "  order %s", m.Order)
	}
	fmt.Fprintln(w)
	for _, d := range m.Devices {
		index := "index ?"
		if d.Index >= 0 {
			index = fmt.Sprintf("index %d", d.Index)
		}
		fmt.Fprintf(w, "  %d  %-9s %s  %s", d.Ordinal, index, d.UUID, d.PCIBusID)
		if d.Selected != "" {
			fmt.Fprintf(w, "  %s", d.Selected)
		}
		fmt.Fprintln(w)
	}
	if m.Warning != "" {
		fmt.Fprintf(w, "warning     %s\n", m.Warning)
	}
}
