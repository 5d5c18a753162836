package main

import (
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/stretchr/testify/assert"
)

// TestTheDeviceMapsWarningIsPrinted: the fake hosts number their GPUs in PCI
// order, so the warning is shown here on a map that says it.
func TestTheDeviceMapsWarningIsPrinted(t *testing.T) {
	m := deviceMapOf(device.DeviceMap{Backend: "cuda", Order: "FASTEST_FIRST", Warning: "cuda numbers these GPUs of more than one model in another order",
		Devices: []device.MappedDevice{{Ordinal: 0, Index: -1, UUID: "GPU-b", PCIBusID: "0000:3b:00.0"}, {Ordinal: 1, Index: 0, UUID: "GPU-a", PCIBusID: "0000:18:00.0"}}})
	var text strings.Builder
	writeDeviceMap(&text, m)
	assert.Equal(t, "device map  order FASTEST_FIRST\n"+
		"  0  index ?   GPU-b  0000:3b:00.0\n"+
		"  1  index 0   GPU-a  0000:18:00.0\n"+
		"warning     cuda numbers these GPUs of more than one model in another order\n", text.String())
	var rep strings.Builder
	writeJSON(&rep, report{DeviceMap: m})
	assert.Contains(t, rep.String(), `"warning": "cuda numbers these GPUs`)
	assert.Contains(t, rep.String(), `"index": -1`)
}
