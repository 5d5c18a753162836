package watch

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
)

// Level is how bad a condition is.
type Level int

// The levels of a condition.
const (
	Degraded  Level = iota + 1 // the device works but needs attention soon
	Unhealthy                  // the device is unusable until a reset or service
)

// Condition is one of the driver's verdicts on a device, by kind: the last
// event of that kind set it, and an event of that kind that informs or
// recovers clears it.
type Condition struct {
	Kind    healthwatch.Kind
	Level   Level
	Message string
	Hint    string
	At      time.Time
}

// ReplayStorm is the PCIe replay rate above which a device is degraded:
// DCGM's PCIe health watch warns above 8 replays a minute.
const ReplayStorm = 8.0

// replayWindow is how far back the replay rate looks.
const replayWindow = time.Minute

// replaySample is one read of a device's PCIe replay counter.
type replaySample struct {
	at    time.Time
	count uint64
}

// verdictKinds are the kinds whose events set or clear a condition.
var verdictKinds = map[healthwatch.Kind]bool{
	healthwatch.KindRecovery: true, healthwatch.KindRemap: true, healthwatch.KindFabric: true,
	healthwatch.KindReset: true, healthwatch.KindRingHang: true,
}

// applyVerdict applies an event of the driver's own verdicts to d; it
// reports whether ev was one.
func applyVerdict(d *Device, ev healthwatch.Event, now time.Time) bool {
	if ev.Kind == healthwatch.KindReplay {
		d.rateReplays(uint64(max(ev.Code, 0)), now)
		return true
	}
	if !verdictKinds[ev.Kind] {
		return false
	}
	if ev.Action == healthwatch.Recover && recoversLoss(d, ev) {
		d.Recovered = now
	}
	switch ev.Kind {
	case healthwatch.KindRecovery:
		d.Recovery = ev.Recovery
	case healthwatch.KindFabric:
		d.Fabric = ev.Fabric
	}
	switch ev.Action {
	case healthwatch.Lose:
		d.setCondition(Condition{Kind: ev.Kind, Level: Unhealthy, Message: ev.Message, Hint: ev.Hint, At: now})
	case healthwatch.Degrade:
		d.setCondition(Condition{Kind: ev.Kind, Level: Degraded, Message: ev.Message, Hint: ev.Hint, At: now})
	default: // Inform, or Recover: the kind's own verdict is healthy again
		d.clearCondition(ev.Kind)
	}
	return true
}

// recoversLoss reports whether ev, an event that recovers its kind, is the
// driver's word that the GPU was reset, so that a new process may use it
// after a loss: a reset done (AMD's post-reset event), a remap that a reset
// applied, or NVML's recovery action back to none from one that needed a
// reset or more. It reads d before ev is applied. A fabric healthy again (a
// GPU lost to Xid 79 is lost still) or a drain that ended recovers only
// its own condition.
func recoversLoss(d *Device, ev healthwatch.Event) bool {
	switch ev.Kind {
	case healthwatch.KindReset, healthwatch.KindRemap:
		return true
	case healthwatch.KindRecovery:
		switch d.Recovery {
		case healthwatch.RecoveryResetGPU, healthwatch.RecoveryRebootNode, healthwatch.RecoveryService:
			return true
		}
	}
	return false
}

// setCondition sets the condition of c's kind, keeping the most severe
// first (the latest first among equals).
func (d *Device) setCondition(c Condition) {
	d.clearCondition(c.Kind)
	d.Conditions = append(d.Conditions, c)
	slices.SortStableFunc(d.Conditions, func(a, b Condition) int {
		return cmp.Or(cmp.Compare(b.Level, a.Level), b.At.Compare(a.At))
	})
}

// clearCondition removes the condition of kind, if d has one.
func (d *Device) clearCondition(kind healthwatch.Kind) {
	d.Conditions = slices.DeleteFunc(slices.Clone(d.Conditions), func(c Condition) bool { return c.Kind == kind })
	if len(d.Conditions) == 0 {
		d.Conditions = nil
	}
}

// rateReplays takes a read of the replay counter and rates it over the
// window: the rate since the newest read at least a window old, or since
// the oldest read kept while the reads span less. A counter that went back
// (the driver reloaded) starts the rating again.
func (d *Device) rateReplays(count uint64, now time.Time) {
	if n := len(d.replays); n > 0 && count < d.replays[n-1].count {
		d.replays = nil
	}
	d.replays = append(slices.Clone(d.replays), replaySample{now, count})
	// Keep the newest sample at least a window old, and those after it.
	keep := 0
	for i, s := range d.replays {
		if now.Sub(s.at) >= replayWindow {
			keep = i
		}
	}
	d.replays = d.replays[keep:]
	ref := d.replays[0]
	if span := now.Sub(ref.at); span > 0 {
		d.ReplaysPerMinute = float64(count-ref.count) / span.Minutes()
	}
	if d.ReplaysPerMinute > ReplayStorm {
		d.setCondition(Condition{Kind: healthwatch.KindReplay, Level: Degraded, At: now,
			Message: fmt.Sprintf("%.1f PCIe replays a minute, above DCGM's threshold of %g: the link to the GPU is failing", d.ReplaysPerMinute, ReplayStorm),
			Hint:    "reseat or replace the GPU or its riser, or check the slot's PCIe generation (lspci -vv: LnkSta); move work off it"})
	} else {
		d.clearCondition(healthwatch.KindReplay)
	}
}
