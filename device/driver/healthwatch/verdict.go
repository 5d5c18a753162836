package healthwatch

import (
	"fmt"
	"time"
)

// Verdict is a device's health in one word. It weighs everything the
// Runtime knows of the device: its losses, its health watch, and the
// driver's own verdicts. Those are the recovery action, row remapping, the
// PCIe replay rate, and the fabric. The zero value is [VerdictUnknown]: a
// device is never healthy by default.
type Verdict int

// The verdicts, from least to most severe. VerdictUnknown is the exception:
// it says nothing of the device.
const (
	// VerdictUnknown means the Runtime cannot say. Nothing watches the
	// device (no NVML, no ROCm SMI, a backend without a watch). Or the watch
	// is stopped, abandoned, or stuck in a driver call past its deadline.
	VerdictUnknown Verdict = iota
	// VerdictHealthy means the device is watched and nothing is wrong.
	VerdictHealthy
	// VerdictDegraded means the device works but needs attention soon. A
	// row remap waits for a reset, PCIe replays run above 8 a minute, the
	// driver asks for a drain, or the fabric runs at limited capacity. Work
	// may still run on it. Readiness stays 200 unless the
	// server says otherwise (health.WithDegradedNotReady).
	VerdictDegraded
	// VerdictUnhealthy means the device is lost for the rest of the
	// process. The cause is a fatal Xid, a hung call, a recovery action of
	// reset or reboot, a failed row remap, or a ring hang. Only a new
	// process can use it again, and only after the driver reports it
	// recovered.
	VerdictUnhealthy
)

// String is the verdict's name: "unknown", "healthy", "degraded",
// "unhealthy".
func (v Verdict) String() string {
	switch v {
	case VerdictHealthy:
		return "healthy"
	case VerdictDegraded:
		return "degraded"
	case VerdictUnhealthy:
		return "unhealthy"
	}
	return "unknown"
}

// MarshalText encodes the verdict as its name, for JSON.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText decodes a verdict's name; any other text is an error.
func (v *Verdict) UnmarshalText(text []byte) error {
	for _, w := range []Verdict{VerdictUnknown, VerdictHealthy, VerdictDegraded, VerdictUnhealthy} {
		if string(text) == w.String() {
			*v = w
			return nil
		}
	}
	return fmt.Errorf("driver: %q is not a verdict (healthy, degraded, unhealthy, unknown)", text)
}

// Condition is one of the driver's verdicts on a device, as its last event
// of that kind set it. Its kinds are the recovery action, the row-remap
// state, the replay rate, the fabric, a reset in progress, and an AMD ring
// hang.
type Condition struct {
	Kind    Kind      `json:"kind"`
	Verdict Verdict   `json:"verdict"`
	Message string    `json:"message"`        // what the driver said, in words
	Hint    string    `json:"hint,omitempty"` // what to do about it
	At      time.Time `json:"at"`             // when the event that set it came
}
