package device

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/internal/watch"
)

// DeviceHealth is what a Runtime knows of one device's health after init.
// It comes from the backend's health watch ([driver.HealthWatcher]):
// NVIDIA's Xid and ECC events and counters, or amdgpu's RAS counters.
type DeviceHealth struct {
	Ordinal int
	// Watched reports that the device's health events are watched. Where
	// they are not (no NVML, no event API, a backend without a watch), the
	// device's health is unknown, never "healthy". Why then says why.
	// A device is watched while any of its backend's sources watches it
	// (AMD: RAS counters, ROCm SMI events). Why then names those that do not.
	Watched bool
	Why     string
	// Counted are the events counted against the device, by kind and code
	// ("xid 13", "ecc corrected"). They leave it in service.
	Counted map[string]int64
	// Counters are the device's latest counters, where the watch reads
	// them.
	Counters *healthwatch.Counters
	// WatchError is the watch's failure, which it retries. It is "" once
	// the watch watches or reads again. WatchErrors counts the failures.
	WatchError  string
	WatchErrors int64
	// Hint is advice the counters call for, such as persistence mode
	// being off. It is "" when there is none.
	Hint string
	// UnwatchedCalls counts the calls into the device's driver that ran
	// without the call deadline's watch. The watch covers 64 calls at once
	// per device; these found that many already in flight.
	UnwatchedCalls int64

	// Verdict is the device's health in one word. Reason says why in a
	// sentence; it is "" when healthy. Since is when the verdict became so.
	// It is zero while the verdict has been unknown from the start.
	Verdict healthwatch.Verdict
	Reason  string
	Since   time.Time
	// Conditions are the driver's own verdicts that are not healthy. There
	// is one per kind, as its last event set it, most severe first.
	Conditions []healthwatch.Condition
	// Recovery is what the driver says the GPU needs: NVML's GPU recovery
	// action. It is [healthwatch.RecoveryUnknown] where the driver cannot say.
	Recovery healthwatch.RecoveryAction
	// ReplaysPerMinute is the PCIe replay rate over the last minute's
	// counter reads. It is 0 where the counter is not read.
	ReplaysPerMinute float64
	// Fabric is the GPU's fabric state where it has one (NVLink domains).
	Fabric *healthwatch.FabricState
	// Recovered is when the driver last said the device is usable again.
	// That is a reset: the recovery action back to none after a reset, a
	// row remap that a reset applied, or AMD's post-reset event. A fabric
	// healthy again, or a drain that ended, is not. It is zero if never.
	Recovered time.Time
	// HungCall names the health watch's driver call that is past its
	// deadline on the device, such as "nvmlEventSetWait_v2". It is "" when
	// there is none.
	HungCall string
}

// clone is h with its own copies of its map, slice and pointed-to structs.
func (h DeviceHealth) clone() DeviceHealth {
	h.Counted = maps.Clone(h.Counted)
	h.Conditions = slices.Clone(h.Conditions)
	if h.Fabric != nil {
		f := *h.Fabric
		h.Fabric = &f
	}
	if c := h.Counters; c != nil {
		h.Counters = &healthwatch.Counters{
			ECCEnabled: clonePtr(c.ECCEnabled), ECCCorrected: clonePtr(c.ECCCorrected),
			ECCUncorrected: clonePtr(c.ECCUncorrected), RowRemapsPending: clonePtr(c.RowRemapsPending),
			RowRemapFailed: clonePtr(c.RowRemapFailed), RetiredPages: clonePtr(c.RetiredPages),
			RetiredPagesPending: clonePtr(c.RetiredPagesPending), PCIeReplays: clonePtr(c.PCIeReplays),
			Persistence: clonePtr(c.Persistence), ThrottleReasons: slices.Clone(c.ThrottleReasons),
		}
	}
	return h
}

// clonePtr is a pointer to a copy of *p, or nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// settled reports whether the health watch has said something of the
// device: that it watches it and has read its counters (or failed to), or
// why it cannot. Until then the watch is starting.
func (h DeviceHealth) settled() bool {
	if h.Watched {
		return h.Counters != nil || h.WatchError != ""
	}
	return h.Why != watch.NotStarted
}

// view is what the Runtime publishes of its devices' health and losses. It
// is remade at each change and read without a lock. Nothing in it is
// modified.
type view struct {
	lost      []LostDevice
	health    []DeviceHealth
	counts    map[int]int64
	abandoned bool          // Shutdown abandoned the health watch
	changed   chan struct{} // closed when the next view replaces this one
}

// views serializes the remaking of the view. The last to remake it then
// reads the newest state.
type views struct{ mu sync.Mutex }

// republish remakes the view from the health watch.
func (r *Runtime) republish() {
	r.views.mu.Lock()
	defer r.views.mu.Unlock()
	w := r.watch.Load()
	if w == nil {
		return
	}
	now := w.Snapshot() // one moment: a loss and the event that lost it show together
	v := &view{counts: now.Counts, abandoned: now.Abandoned, changed: make(chan struct{})}
	for _, l := range now.Losses {
		v.lost = append(v.lost, lostDevice(l))
	}
	calls := r.calls.Load()
	for _, d := range now.Devices {
		h := DeviceHealth{Ordinal: d.Ordinal, Watched: d.Watched, Why: d.Why, Counted: d.Counted,
			Counters: d.Counters, WatchError: d.WatchError, WatchErrors: d.WatchErrors, Hint: d.Hint,
			Recovery: d.Recovery, ReplaysPerMinute: d.ReplaysPerMinute, Fabric: d.Fabric,
			Recovered: d.Recovered, HungCall: d.HungCall, Conditions: conditions(d.Conditions)}
		if calls != nil {
			h.UnwatchedCalls = calls.Unwatched(d.Ordinal)
		}
		h.Verdict, h.Reason = judge(h, v.lost)
		v.health = append(v.health, h)
	}
	old := r.view.Load()
	at := time.Now()
	for i := range v.health {
		h := &v.health[i]
		if i < len(old.health) && old.health[i].Verdict == h.Verdict {
			h.Since = old.health[i].Since
		} else if h.Verdict != healthwatch.VerdictUnknown || i < len(old.health) {
			h.Since = at
		}
	}
	close(r.view.Swap(v).changed)
}

// lostDevice is the public form of a loss.
func lostDevice(l watch.Loss) LostDevice {
	return LostDevice{Ordinal: l.Ordinal, Source: LossSource(l.Source), Err: l.Err, At: l.At}
}

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
