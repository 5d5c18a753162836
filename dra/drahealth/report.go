package drahealth

import (
	"strings"
	"unicode/utf8"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// MaxMessage is the longest message a report carries, in bytes (so in
// characters too): the DRAResourceHealth API's limit. A longer reason is cut
// on a character boundary and ends in "...", as the kubelet would cut it.
const MaxMessage = 1024

// noState is the message of a device its Source has no state for.
const noState = "unknown: gpuinit has no health for this device yet"

// status is what a device in state s reports: its health and its message.
// degraded is what a Degraded device reports.
func status(s State, degraded kubeletplugin.HealthStatus) (kubeletplugin.HealthStatus, string) {
	switch {
	case s.Verdict == healthwatch.VerdictUnhealthy:
		return kubeletplugin.HealthStatusUnhealthy, message("unhealthy", s.Reason)
	case s.Stale != "" && s.Verdict == healthwatch.VerdictUnknown:
		return kubeletplugin.HealthStatusUnknown, message("unknown", s.Stale)
	case s.Stale != "":
		return kubeletplugin.HealthStatusUnknown, message("unknown", s.Stale+" (its last verdict was "+s.Verdict.String()+")")
	case s.Verdict == healthwatch.VerdictHealthy:
		return kubeletplugin.HealthStatusHealthy, ""
	case s.Verdict == healthwatch.VerdictDegraded:
		return degraded, message("degraded", s.Reason)
	}
	return kubeletplugin.HealthStatusUnknown, message("unknown", s.Reason)
}

// message is "verdict: reason", valid UTF-8 (a gRPC string must be), at
// most MaxMessage bytes.
func message(verdict, reason string) string {
	if reason == "" {
		return verdict
	}
	return truncate(strings.ToValidUTF8(verdict+": "+reason, "\uFFFD"), MaxMessage)
}

// truncate cuts s to at most max bytes on a character boundary, ending in
// "..." where it cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
