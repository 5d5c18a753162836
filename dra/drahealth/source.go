package drahealth

import (
	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
)

// Source tells a Feed its devices' health.
type Source interface {
	// Health is every device's health at this moment and a channel closed
	// at the next change. It must not block, and is called from any
	// goroutine; a Feed calls it at each change and at each re-send.
	Health() Snapshot
}

// Snapshot is a Source's devices' health at one moment.
type Snapshot struct {
	// Devices are the states the Source has, in any order. A device of the
	// Feed's that has none is reported Unknown.
	Devices []State
	// Changed is closed at the next change of any device's state. nil
	// means the Source never says: the Feed's re-sends alone carry its
	// changes.
	Changed <-chan struct{}
}

// State is what a Source knows of one device's health.
type State struct {
	// Ordinal is the device's ordinal, as in its device.Info.
	Ordinal int
	// Verdict and Reason are the device's verdict and why, as in
	// device.DeviceHealth.
	Verdict healthwatch.Verdict
	Reason  string
	// Stale says why the Source cannot vouch for Verdict now (its watch is
	// stuck in a driver call, stopped, or closed); "" while it can. A stale
	// device is reported Unknown, unless it is Unhealthy: a device lost
	// stays lost for the rest of the process, watched or not.
	Stale string
}

// FromRuntime is the Source of a gpuinit Runtime, whichever its backend:
// its Stats' Health, Lost and Changed. A device is stale while the
// Runtime's health watch is stuck in a driver call (DeviceHealth.HungCall),
// after Shutdown has started (Stats.Closed), and once Shutdown abandoned the
// watch (Stats.HealthWatchAbandoned). Before the Runtime's first successful
// Init it has no state: every device is Unknown. Its Health allocates one
// slice and takes no lock.
func FromRuntime(rt *device.Runtime) Source { return runtimeSource{rt} }

type runtimeSource struct{ rt *device.Runtime }

func (s runtimeSource) Health() Snapshot {
	st := s.rt.Stats()
	snap := Snapshot{Devices: make([]State, len(st.Health)), Changed: st.Changed()}
	for i, h := range st.Health {
		snap.Devices[i] = State{Ordinal: h.Ordinal, Verdict: h.Verdict, Reason: h.Reason, Stale: stale(st, h)}
	}
	return snap
}

// stale is why the Runtime cannot vouch for h now, or "".
func stale(st device.Stats, h device.DeviceHealth) string {
	switch {
	case st.Closed:
		return "gpuinit's Runtime is shut down"
	case st.HealthWatchAbandoned:
		return "gpuinit's health watch was abandoned in a driver call"
	case h.HungCall != "":
		return "gpuinit's health watch is stuck in " + h.HungCall
	}
	return ""
}
