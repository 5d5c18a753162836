package drahealth

import (
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	resourceapi "k8s.io/api/resource/v1"
)

// TaintKey is the key of the taints TaintFor makes; their value is the
// verdict ("unhealthy", "degraded", "unknown").
const TaintKey = "gpuinit.io/health"

// TaintFor is the taint a device in state s carries in a ResourceSlice, and
// false for none:
//
//   - Unhealthy: NoExecute. The device is lost for the rest of the process
//     (a fatal Xid, fallen off the bus): pods that use it are evicted,
//     and no new pod gets it.
//   - Degraded: NoSchedule. It works but needs attention (a row remap waits
//     for a reset): running pods stay, new ones go elsewhere.
//   - Unknown, or stale: None, which only informs. Unknown says nothing of
//     the device, and a host whose driver has no health API would
//     otherwise lose every GPU; a stuck watch is the health report's to say.
//   - Healthy: none.
//
// The taint's TimeAdded is left for the API server to set.
func TaintFor(s State) (resourceapi.DeviceTaint, bool) {
	t := resourceapi.DeviceTaint{Key: TaintKey}
	switch {
	case s.Verdict == healthwatch.VerdictUnhealthy:
		t.Value, t.Effect = "unhealthy", resourceapi.DeviceTaintEffectNoExecute
	case s.Stale != "" || s.Verdict == healthwatch.VerdictUnknown:
		t.Value, t.Effect = "unknown", resourceapi.DeviceTaintEffectNone
	case s.Verdict == healthwatch.VerdictDegraded:
		t.Value, t.Effect = "degraded", resourceapi.DeviceTaintEffectNoSchedule
	default:
		return resourceapi.DeviceTaint{}, false
	}
	return t, true
}

// Taint sets, on each of devices that is the Feed's (by name, in the Feed's
// pools), the taint of its state now (TaintFor), replacing any with
// TaintKey and keeping the others. A driver calls it on the devices of each
// ResourceSlice it publishes, and publishes again when the Source's
// Changed is closed. A device that a Source has no state for is Unknown. A
// slice with any tainted device holds at most 64 devices (the API's limit).
func (f *Feed) Taint(pool string, devices []resourceapi.Device) {
	states := map[int]State{}
	for _, s := range f.src.Health().Devices {
		states[s.Ordinal] = s
	}
	for i := range devices {
		d := &devices[i]
		ordinal, ok := f.ordinalOf(pool, d.Name)
		if !ok {
			continue
		}
		kept := d.Taints[:0:0]
		for _, t := range d.Taints {
			if t.Key != TaintKey {
				kept = append(kept, t)
			}
		}
		s, ok := states[ordinal]
		if !ok {
			s = State{Ordinal: ordinal, Verdict: healthwatch.VerdictUnknown}
		}
		if t, ok := TaintFor(s); ok {
			kept = append(kept, t)
		}
		if len(kept) == 0 {
			kept = nil
		}
		d.Taints = kept
	}
}

// ordinalOf is the ordinal of the Feed's device named name in pool.
func (f *Feed) ordinalOf(pool, name string) (int, bool) {
	for i, id := range f.ids {
		if id.Pool == pool && id.Device == name {
			return f.devices[i].Ordinal, true
		}
	}
	return 0, false
}
