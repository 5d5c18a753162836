package main

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/stretchr/testify/assert"
)

func TestTheNodesHealthLabelIsItsWorstDevicesVerdict(t *testing.T) {
	dev := func(v device.Verdict) deviceInfo { return deviceInfo{Health: &health.DeviceHealth{Verdict: v}} }
	cases := []struct {
		name    string
		devices []deviceInfo
		want    string
	}{
		{"no devices, no label", nil, ""},
		{"every device healthy", []deviceInfo{dev(device.VerdictHealthy), dev(device.VerdictHealthy)}, "healthy"},
		{"one unknown among healthy", []deviceInfo{dev(device.VerdictHealthy), dev(device.VerdictUnknown)}, "unknown"},
		{"a device without health is unknown", []deviceInfo{dev(device.VerdictHealthy), {}}, "unknown"},
		{"degraded outranks unknown", []deviceInfo{dev(device.VerdictUnknown), dev(device.VerdictDegraded)}, "degraded"},
		{"unhealthy outranks all", []deviceInfo{dev(device.VerdictDegraded), dev(device.VerdictUnhealthy), dev(device.VerdictUnknown)}, "unhealthy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, worstVerdict(c.devices)) })
	}
}

func TestEachDevicesVerdictIsAStateSetAndItsRecoveryActionASeries(t *testing.T) {
	r := report{Backend: "cuda", Devices: []deviceInfo{
		{Ordinal: 0, UUID: "GPU-a", Health: &health.DeviceHealth{Verdict: device.VerdictUnhealthy, Recovery: "reset-gpu"}},
		{Ordinal: 1, UUID: "GPU-b", Health: &health.DeviceHealth{Verdict: device.VerdictHealthy}},
	}}
	var b bytes.Buffer
	labels := func(d deviceInfo) string { return fmt.Sprintf("ordinal=\"%d\"", d.Ordinal) }
	verdictMetrics(&b, r, labels, func(string, string) {})
	assert.Equal(t, `gpuinit_device_verdict{ordinal="0",verdict="healthy"} 0
gpuinit_device_verdict{ordinal="0",verdict="degraded"} 0
gpuinit_device_verdict{ordinal="0",verdict="unhealthy"} 1
gpuinit_device_verdict{ordinal="0",verdict="unknown"} 0
gpuinit_device_verdict{ordinal="1",verdict="healthy"} 1
gpuinit_device_verdict{ordinal="1",verdict="degraded"} 0
gpuinit_device_verdict{ordinal="1",verdict="unhealthy"} 0
gpuinit_device_verdict{ordinal="1",verdict="unknown"} 0
gpuinit_device_recovery_action{ordinal="0",action="reset-gpu"} 1
`, b.String())
}
