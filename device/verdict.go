package device

import (
	"time"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/internal/watch"
)

// judge is a device's verdict and its reason. It is unhealthy once lost,
// and unknown while not watched. Otherwise it is the most severe of the
// driver's conditions, or healthy.
func judge(h DeviceHealth, lost []LostDevice) (healthwatch.Verdict, string) {
	for _, l := range lost {
		if l.Ordinal == h.Ordinal {
			why := "lost: " + l.Err.Error()
			if h.Recovered.After(l.At) {
				why += " (the driver reported it usable again at " + h.Recovered.Format(time.RFC3339) + ": a new process may use it)"
			}
			return healthwatch.VerdictUnhealthy, why
		}
	}
	if h.HungCall != "" {
		return healthwatch.VerdictUnknown, "the health watch's call " + h.HungCall + " is past its deadline"
	}
	if !h.Watched {
		return healthwatch.VerdictUnknown, h.Why
	}
	if len(h.Conditions) > 0 {
		c := h.Conditions[0]
		return c.Verdict, string(c.Kind) + ": " + c.Message
	}
	return healthwatch.VerdictHealthy, ""
}

// conditions is the public form of the watch's conditions.
func conditions(cs []watch.Condition) []healthwatch.Condition {
	if len(cs) == 0 {
		return nil
	}
	out := make([]healthwatch.Condition, len(cs))
	for i, c := range cs {
		v := healthwatch.VerdictDegraded
		if c.Level == watch.Unhealthy {
			v = healthwatch.VerdictUnhealthy
		}
		out[i] = healthwatch.Condition{Kind: c.Kind, Verdict: v, Message: c.Message, Hint: c.Hint, At: c.At}
	}
	return out
}
