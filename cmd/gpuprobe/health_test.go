package main

import (
	"fmt"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/stretchr/testify/assert"
)

func TestTheNodesHealthLabelIsItsWorstDevicesVerdict(t *testing.T) {
	dev := func(v healthwatch.Verdict) deviceInfo { return deviceInfo{Health: &health.DeviceHealth{Verdict: v}} }
	cases := []struct {
		name    string
		devices []deviceInfo
		want    string
	}{
		{"no devices, no label", nil, ""},
		{"every device healthy", []deviceInfo{dev(healthwatch.VerdictHealthy), dev(healthwatch.VerdictHealthy)}, "healthy"},
		{"one unknown among healthy", []deviceInfo{dev(healthwatch.VerdictHealthy), dev(healthwatch.VerdictUnknown)}, "unknown"},
		{"a device without health is unknown", []deviceInfo{dev(healthwatch.VerdictHealthy), {}}, "unknown"},
		{"degraded outranks unknown", []deviceInfo{dev(healthwatch.VerdictUnknown), dev(healthwatch.VerdictDegraded)}, "degraded"},
		{"unhealthy outranks all", []deviceInfo{dev(healthwatch.VerdictDegraded), dev(healthwatch.VerdictUnhealthy), dev(healthwatch.VerdictUnknown)}, "unhealthy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, worstVerdict(c.devices)) })
	}
}

func TestEachDevicesVerdictIsAStateSetAndItsRecoveryActionASeries(t *testing.T) {
	r := report{Backend: "cuda", Devices: []deviceInfo{
		{Ordinal: 0, UUID: "GPU-a", Health: &health.DeviceHealth{Verdict: healthwatch.VerdictUnhealthy, Recovery: "reset-gpu"}},
		{Ordinal: 1, UUID: "GPU-b", Health: &health.DeviceHealth{Verdict: healthwatch.VerdictHealthy}},
	}}
	var m metrics
	labels := func(d deviceInfo, more ...string) []string {
		return append([]string{"ordinal", fmt.Sprint(d.Ordinal)}, more...)
	}
	verdictMetrics(&m, r, labels)
	assert.Equal(t, `# HELP gpuinit_device_verdict The device's health in one word, one series a verdict: 1 for the device's (healthy, degraded, unhealthy, unknown), 0 for the others.
# TYPE gpuinit_device_verdict gauge
gpuinit_device_verdict{ordinal="0",verdict="healthy"} 0
gpuinit_device_verdict{ordinal="0",verdict="degraded"} 0
gpuinit_device_verdict{ordinal="0",verdict="unhealthy"} 1
gpuinit_device_verdict{ordinal="0",verdict="unknown"} 0
gpuinit_device_verdict{ordinal="1",verdict="healthy"} 1
gpuinit_device_verdict{ordinal="1",verdict="degraded"} 0
gpuinit_device_verdict{ordinal="1",verdict="unhealthy"} 0
gpuinit_device_verdict{ordinal="1",verdict="unknown"} 0
# HELP gpuinit_device_recovery_action What the driver says the GPU needs (NVML's GPU recovery action: none, reset-gpu, reboot-node, drain, service): 1 for the action; absent where the driver cannot say.
# TYPE gpuinit_device_recovery_action gauge
gpuinit_device_recovery_action{ordinal="0",action="reset-gpu"} 1
`, m.b.String())
}
