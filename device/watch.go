package device

import (
	"sync"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/healthwatch"
)

// DeviceHealth is what a Runtime knows of one device's health after init,
// from its backend's health watch (driver.HealthWatcher): NVIDIA's Xid and
// ECC events and counters, amdgpu's RAS counters.
type DeviceHealth struct {
	Ordinal int
	// Watched reports that the device's health events are watched. Where
	// they are not (no NVML, no event API, a backend without a watch) the
	// device's health is unknown, and Why says why: never "healthy".
	Watched bool
	Why     string
	// Counted are the events counted against the device, by kind and code
	// ("xid 13", "ecc corrected"), which leave it in service.
	Counted map[string]int64
	// Counters are the device's latest counters, where the watch reads
	// them.
	Counters *driver.HealthCounters
	// WatchError is the watch's failure, which it retries; "" once it
	// watches or reads again. WatchErrors counts the failures.
	WatchError  string
	WatchErrors int64
	// Hint is advice the counters call for, such as persistence mode
	// being off; "" when none.
	Hint string
	// UnwatchedCalls counts the calls into the device's driver that ran
	// without the call deadline's watch, because as many calls as it
	// watches at once (64) were already in flight on the device.
	UnwatchedCalls int64
}

// view is what the Runtime publishes of its devices' health and losses,
// remade at each change, read without a lock; nothing in it is modified.
type view struct {
	lost   []LostDevice
	health []DeviceHealth
	counts map[int]int64
}

// views serializes the remaking of the view, so that the last to remake it
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
	v := &view{counts: w.Counts()}
	for _, l := range w.Losses() {
		v.lost = append(v.lost, lostDevice(l))
	}
	calls := r.calls.Load()
	for _, d := range w.Devices() {
		h := DeviceHealth{Ordinal: d.Ordinal, Watched: d.Watched, Why: d.Why, Counted: d.Counted,
			Counters: d.Counters, WatchError: d.WatchError, WatchErrors: d.WatchErrors, Hint: d.Hint}
		if calls != nil {
			h.UnwatchedCalls = calls.Unwatched(d.Ordinal)
		}
		v.health = append(v.health, h)
	}
	r.view.Store(v)
}

// lostDevice is the public form of a loss.
func lostDevice(l healthwatch.Loss) LostDevice {
	return LostDevice{Ordinal: l.Ordinal, Source: LossSource(l.Source), Err: l.Err, At: l.At}
}
