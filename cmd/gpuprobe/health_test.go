package main

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/stretchr/testify/assert"
)

func TestTheNodesHealthLabelIsItsWorstDevicesVerdict(t *testing.T) {
	dev := func(v driver.Verdict) deviceInfo { return deviceInfo{Health: &health.DeviceHealth{Verdict: v}} }
	cases := []struct {
		name    string
		devices []deviceInfo
		want    string
	}{
		{"no devices, no label", nil, ""},
		{"every device healthy", []deviceInfo{dev(driver.VerdictHealthy), dev(driver.VerdictHealthy)}, "healthy"},
		{"one unknown among healthy", []deviceInfo{dev(driver.VerdictHealthy), dev(driver.VerdictUnknown)}, "unknown"},
		{"a device without health is unknown", []deviceInfo{dev(driver.VerdictHealthy), {}}, "unknown"},
		{"degraded outranks unknown", []deviceInfo{dev(driver.VerdictUnknown), dev(driver.VerdictDegraded)}, "degraded"},
		{"unhealthy outranks all", []deviceInfo{dev(driver.VerdictDegraded), dev(driver.VerdictUnhealthy), dev(driver.VerdictUnknown)}, "unhealthy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, worstVerdict(c.devices)) })
	}
}

func TestEachDevicesVerdictIsAStateSetAndItsRecoveryActionASeries(t *testing.T) {
	r := report{Backend: "cuda", Devices: []deviceInfo{
		{Ordinal: 0, UUID: "GPU-a", Health: &health.DeviceHealth{Verdict: driver.VerdictUnhealthy, Recovery: "reset-gpu"}},
		{Ordinal: 1, UUID: "GPU-b", Health: &health.DeviceHealth{Verdict: driver.VerdictHealthy}},
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
