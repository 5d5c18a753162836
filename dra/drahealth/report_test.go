package drahealth_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/dra/drahealth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// oneDevice is a Feed of one device, ordinal 0, in state s.
func oneDevice(t *testing.T, s drahealth.State, opts drahealth.Options) kubeletplugin.DeviceHealth {
	t.Helper()
	opts.Pool = "node-a"
	f, err := drahealth.NewFeed(newFakeSource(s), []device.Info{{UUID: "GPU-a"}}, opts)
	require.NoError(t, err)
	r := f.Report()
	require.Len(t, r.Devices, 1)
	return r.Devices[0]
}

// TestReportMapsVerdicts: each verdict's health and message, stale states
// Unknown but for a lost device, Degraded by its rule.
func TestReportMapsVerdicts(t *testing.T) {
	unhealthy, healthyStatus, unknown := kubeletplugin.HealthStatusUnhealthy, kubeletplugin.HealthStatusHealthy, kubeletplugin.HealthStatusUnknown
	for _, tc := range []struct {
		name     string
		state    drahealth.State
		degraded kubeletplugin.HealthStatus
		health   kubeletplugin.HealthStatus
		message  string
	}{
		{"healthy", healthy(0), "", healthyStatus, ""},
		{"lost: unhealthy, with the reason", drahealth.State{Verdict: healthwatch.VerdictUnhealthy, Reason: "lost: xid 79"}, "",
			unhealthy, "unhealthy: lost: xid 79"},
		{"lost and stale: still unhealthy", drahealth.State{Verdict: healthwatch.VerdictUnhealthy, Reason: "lost: xid 79", Stale: "stuck"}, "",
			unhealthy, "unhealthy: lost: xid 79"},
		{"healthy but stale: unknown, never healthy", drahealth.State{Verdict: healthwatch.VerdictHealthy,
			Stale: "gpuinit's health watch is stuck in nvmlEventSetWait_v2"}, "",
			unknown, "unknown: gpuinit's health watch is stuck in nvmlEventSetWait_v2 (its last verdict was healthy)"},
		{"unknown and stale: the staleness says why", drahealth.State{Verdict: healthwatch.VerdictUnknown,
			Reason: "the health watch's call nvmlEventSetWait_v2 is past its deadline",
			Stale:  "gpuinit's health watch is stuck in nvmlEventSetWait_v2"}, "",
			unknown, "unknown: gpuinit's health watch is stuck in nvmlEventSetWait_v2"},
		{"unknown, with why", drahealth.State{Verdict: healthwatch.VerdictUnknown, Reason: "no NVML"}, "", unknown, "unknown: no NVML"},
		{"degraded: healthy by default, the reason in the message", drahealth.State{Verdict: healthwatch.VerdictDegraded,
			Reason: "row-remap: pending"}, "", healthyStatus, "degraded: row-remap: pending"},
		{"degraded: unhealthy where asked", drahealth.State{Verdict: healthwatch.VerdictDegraded, Reason: "row-remap: pending"},
			unhealthy, unhealthy, "degraded: row-remap: pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := oneDevice(t, tc.state, drahealth.Options{Degraded: tc.degraded})
			assert.Equal(t, tc.health, d.Health)
			assert.Equal(t, tc.message, d.Message)
			assert.Equal(t, "node-a", d.PoolName)
			assert.Equal(t, "gpu-a", d.DeviceName)
			assert.Equal(t, drahealth.DefaultTimeout, d.HealthCheckTimeout)
		})
	}
	t.Run("a device the Source has no state for is unknown", func(t *testing.T) {
		f, err := drahealth.NewFeed(newFakeSource(healthy(0)), []device.Info{{UUID: "GPU-a"}, {Ordinal: 1, UUID: "GPU-b"}},
			drahealth.Options{Pool: "node-a"})
		require.NoError(t, err)
		r := f.Report()
		assert.Equal(t, healthyStatus, r.Devices[0].Health)
		assert.Equal(t, unknown, r.Devices[1].Health)
		assert.Contains(t, r.Devices[1].Message, "no health for this device yet")
	})
}

// TestReportCutsLongMessagesOnACharacterBoundary: a reason past 1,024 bytes
// is cut there, on a character boundary, ending in "..."; bytes that are
// not UTF-8 (a driver's C string) become U+FFFD, as gRPC needs.
func TestReportCutsLongMessagesOnACharacterBoundary(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
	}{
		{"ASCII", strings.Repeat("x", 5000)},
		{"three-byte characters across the cut", strings.Repeat("€", 2000)},
		{"not UTF-8", strings.Repeat("a\xff", 800)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := oneDevice(t, drahealth.State{Verdict: healthwatch.VerdictUnhealthy, Reason: tc.reason}, drahealth.Options{})
			assert.LessOrEqual(t, len(d.Message), drahealth.MaxMessage)
			assert.Greater(t, len(d.Message), drahealth.MaxMessage-4, "cut no shorter than it must")
			assert.True(t, utf8.ValidString(d.Message))
			assert.True(t, strings.HasSuffix(d.Message, "..."))
			assert.True(t, strings.HasPrefix(d.Message, "unhealthy: "))
		})
	}
	d := oneDevice(t, drahealth.State{Verdict: healthwatch.VerdictUnhealthy, Reason: strings.Repeat("x", drahealth.MaxMessage-len("unhealthy: "))},
		drahealth.Options{})
	assert.Len(t, d.Message, drahealth.MaxMessage, "a message of exactly the limit is kept whole")
	assert.False(t, strings.HasSuffix(d.Message, "..."))
}

// TestNewFeedRefusesBadOptions: each option it cannot use fails, naming it
// first after the prefix, with the sentinel last.
func TestNewFeedRefusesBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts drahealth.Options
		err  string
	}{
		{"degraded as unknown", drahealth.Options{Degraded: kubeletplugin.HealthStatusUnknown}, "Options.Degraded"},
		{"a timeout below a second", drahealth.Options{Timeout: 500 * 1e6}, "Options.Timeout"},
		{"a timeout of part seconds", drahealth.Options{Timeout: 1500 * 1e6}, "Options.Timeout"},
		{"a re-send no sooner than the timeout", drahealth.Options{Timeout: 2e9, Resend: 2e9}, "Options.Resend"},
		{"a negative re-send", drahealth.Options{Resend: -1}, "Options.Resend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Pool = "node-a"
			_, err := drahealth.NewFeed(newFakeSource(), nil, tc.opts)
			assert.ErrorIs(t, err, drahealth.ErrBadOption)
			assert.ErrorContains(t, err, tc.err)
			require.Error(t, err)
			msg := err.Error()
			assert.True(t, strings.HasPrefix(msg, "drahealth: "+tc.err+" "), "the option first, after one prefix: %q", msg)
			assert.True(t, strings.HasSuffix(msg, ": "+drahealth.ErrBadOption.Error()), "the sentinel last: %q", msg)
		})
	}
}
