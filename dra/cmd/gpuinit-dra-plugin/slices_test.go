package main

import (
	"fmt"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/dra/drahealth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
)

// unhealthyAll is a Source whose every device is lost.
type unhealthyAll []device.Info

func (u unhealthyAll) Health() drahealth.Snapshot {
	var s drahealth.Snapshot
	for _, d := range u {
		s.Devices = append(s.Devices, drahealth.State{Ordinal: d.Ordinal, Verdict: healthwatch.VerdictUnhealthy})
	}
	return s
}

// TestResourcesListsMIGSlicesAsDevices: a MIG slice is a device of its own,
// by its own UUID, with its profile and parent, and no PCI bus id of its own.
func TestResourcesListsMIGSlicesAsDevices(t *testing.T) {
	devices := []device.Info{
		{Ordinal: 0, UUID: "GPU-aa", PCIBusID: "0000:18:00.0", Name: "NVIDIA H100", TotalMemory: 80 << 30},
		{Ordinal: 1, UUID: "MIG-bb", Name: "NVIDIA H100 MIG 1g.10gb", TotalMemory: 10 << 30,
			MIG: &driver.MIG{ParentUUID: "GPU-cc", ParentPCIBusID: "0000:19:00.0", Profile: "1g.10gb"}},
	}
	feed, err := drahealth.NewFeed(unhealthyAll(devices), devices, drahealth.Options{Pool: "node-a"})
	require.NoError(t, err)
	r := resources("node-a", "cuda", devices, feed)
	require.Len(t, r.Pools["node-a"].Slices, 1)
	got := r.Pools["node-a"].Slices[0].Devices
	require.Len(t, got, 2)
	assert.Equal(t, "gpu-aa", got[0].Name)
	assert.Equal(t, "mig-bb", got[1].Name)
	str := func(d resourceapi.Device, key resourceapi.QualifiedName) string {
		if a, ok := d.Attributes[key]; ok {
			return *a.StringValue
		}
		return ""
	}
	assert.Equal(t, "nvidia", str(got[1], "vendor"))
	assert.Equal(t, "mig", str(got[1], "type"))
	assert.Equal(t, "1g.10gb", str(got[1], "profile"))
	assert.Equal(t, "GPU-cc", str(got[1], "parentUUID"))
	assert.Empty(t, str(got[1], "resource.kubernetes.io/pciBusID"))
	assert.Equal(t, "0000:18:00.0", str(got[0], "resource.kubernetes.io/pciBusID"))
	for _, d := range got {
		assert.Equal(t, []resourceapi.DeviceTaint{{Key: drahealth.TaintKey, Value: "unhealthy",
			Effect: resourceapi.DeviceTaintEffectNoExecute}}, d.Taints, d.Name)
	}
}

// TestResourcesKeepsTaintedSlicesTo64Devices: 100 devices make slices of
// 64 and 36, the API's limit for slices with tainted devices.
func TestResourcesKeepsTaintedSlicesTo64Devices(t *testing.T) {
	var devices []device.Info
	for i := range 100 {
		devices = append(devices, device.Info{Ordinal: i, UUID: fmt.Sprintf("GPU-%03d", i)})
	}
	feed, err := drahealth.NewFeed(unhealthyAll(devices), devices, drahealth.Options{Pool: "node-a"})
	require.NoError(t, err)
	slices := resources("node-a", "hip", devices, feed).Pools["node-a"].Slices
	require.Len(t, slices, 2)
	assert.Len(t, slices[0].Devices, 64)
	assert.Len(t, slices[1].Devices, 36)
	assert.Equal(t, "gpu-099", slices[1].Devices[35].Name)
}
