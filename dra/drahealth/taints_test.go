package drahealth_test

import (
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/dra/drahealth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
)

// TestTaintForEachVerdict: the documented effect for each verdict.
func TestTaintForEachVerdict(t *testing.T) {
	for _, tc := range []struct {
		name   string
		state  drahealth.State
		effect resourceapi.DeviceTaintEffect // "" for no taint
		value  string
	}{
		{"healthy: none", healthy(0), "", ""},
		{"unhealthy: NoExecute", drahealth.State{Verdict: healthwatch.VerdictUnhealthy}, resourceapi.DeviceTaintEffectNoExecute, "unhealthy"},
		{"unhealthy and stale: NoExecute", drahealth.State{Verdict: healthwatch.VerdictUnhealthy, Stale: "x"}, resourceapi.DeviceTaintEffectNoExecute, "unhealthy"},
		{"degraded: NoSchedule", drahealth.State{Verdict: healthwatch.VerdictDegraded}, resourceapi.DeviceTaintEffectNoSchedule, "degraded"},
		{"unknown: None", drahealth.State{Verdict: healthwatch.VerdictUnknown}, resourceapi.DeviceTaintEffectNone, "unknown"},
		{"healthy but stale: None, as unknown", drahealth.State{Verdict: healthwatch.VerdictHealthy, Stale: "x"}, resourceapi.DeviceTaintEffectNone, "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			taint, ok := drahealth.TaintFor(tc.state)
			if tc.effect == "" {
				assert.False(t, ok)
				return
			}
			require.True(t, ok)
			assert.Equal(t, resourceapi.DeviceTaint{Key: drahealth.TaintKey, Value: tc.value, Effect: tc.effect}, taint)
		})
	}
}

// TestFeedTaintSetsTheFeedsDevicesOnly: Taint replaces its own taint, keeps
// other keys, and leaves devices of other pools or names alone.
func TestFeedTaintSetsTheFeedsDevicesOnly(t *testing.T) {
	src := newFakeSource(healthy(0), drahealth.State{Ordinal: 1, Verdict: healthwatch.VerdictUnhealthy})
	f, err := drahealth.NewFeed(src, []device.Info{{Ordinal: 0, UUID: "GPU-a"}, {Ordinal: 1, UUID: "GPU-b"}},
		drahealth.Options{Pool: "node-a"})
	require.NoError(t, err)
	other := resourceapi.DeviceTaint{Key: "example.com/maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule}
	stale := resourceapi.DeviceTaint{Key: drahealth.TaintKey, Value: "degraded", Effect: resourceapi.DeviceTaintEffectNoSchedule}
	devices := []resourceapi.Device{
		{Name: "gpu-a", Taints: []resourceapi.DeviceTaint{stale}},
		{Name: "gpu-b", Taints: []resourceapi.DeviceTaint{other}},
		{Name: "gpu-c", Taints: []resourceapi.DeviceTaint{stale}},
	}
	f.Taint("node-a", devices)
	assert.Nil(t, devices[0].Taints, "healthy again: its old taint is gone")
	assert.Equal(t, []resourceapi.DeviceTaint{other, {Key: drahealth.TaintKey, Value: "unhealthy",
		Effect: resourceapi.DeviceTaintEffectNoExecute}}, devices[1].Taints)
	assert.Equal(t, []resourceapi.DeviceTaint{stale}, devices[2].Taints, "not the Feed's device")

	devices[0].Taints = []resourceapi.DeviceTaint{stale}
	f.Taint("node-b", devices[:1])
	assert.Equal(t, []resourceapi.DeviceTaint{stale}, devices[0].Taints, "another pool's device of the same name")
}
