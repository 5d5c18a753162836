package device

import (
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/watch"
)

// judge is a device's verdict and its reason. It is unhealthy once lost,
// and unknown while not watched. Otherwise it is the most severe of the
// driver's conditions, or healthy.
func judge(h DeviceHealth, lost []LostDevice) (driver.Verdict, string) {
	for _, l := range lost {
		if l.Ordinal == h.Ordinal {
			why := "lost: " + l.Err.Error()
			if h.Recovered.After(l.At) {
				why += " (the driver reported it usable again at " + h.Recovered.Format(time.RFC3339) + ": a new process may use it)"
			}
			return driver.VerdictUnhealthy, why
		}
	}
	if h.HungCall != "" {
		return driver.VerdictUnknown, "the health watch's call " + h.HungCall + " is past its deadline"
	}
	if !h.Watched {
		return driver.VerdictUnknown, h.Why
	}
	if len(h.Conditions) > 0 {
		c := h.Conditions[0]
		return c.Verdict, string(c.Kind) + ": " + c.Message
	}
	return driver.VerdictHealthy, ""
}

// conditions is the public form of the watch's conditions.
func conditions(cs []watch.Condition) []driver.Condition {
	if len(cs) == 0 {
		return nil
	}
	out := make([]driver.Condition, len(cs))
	for i, c := range cs {
		v := driver.VerdictDegraded
		if c.Level == watch.Unhealthy {
			v = driver.VerdictUnhealthy
		}
		out[i] = driver.Condition{Kind: c.Kind, Verdict: v, Message: c.Message, Hint: c.Hint, At: c.At}
	}
	return out
}
