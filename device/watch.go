package device

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

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

// HealthStopGrace bounds how long Close waits for the backend's health watch
// to return once told to stop: the cuda watch's NVML wait returns within a
// second (the driver.HealthWatcher contract asks for a few), and this leaves
// a second's margin. A watch still in the driver past it (a wait or a
// counters read that never returns, on a dead GPU) is abandoned, not waited
// for: see Close.
const HealthStopGrace = 2 * time.Second

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
	for _, d := range w.Devices() {
		v.health = append(v.health, DeviceHealth{Ordinal: d.Ordinal, Watched: d.Watched, Why: d.Why, Counted: d.Counted,
			Counters: d.Counters, WatchError: d.WatchError, WatchErrors: d.WatchErrors, Hint: d.Hint})
	}
	r.view.Store(v)
}

// lostDevice is the public form of a loss.
func lostDevice(l healthwatch.Loss) LostDevice {
	return LostDevice{Ordinal: l.Ordinal, Source: LossSource(l.Source), Err: l.Err, At: l.At}
}

// Health reports each device's health as the Runtime's health watch knows
// it, in a slice of the caller's; nil before a successful init. It takes no
// lock the watch holds for long and never calls the backend.
func (r *Runtime) Health() []DeviceHealth {
	out := slices.Clone(r.view.Load().health)
	w := r.calls.Load()
	for i := range out {
		out[i].Counted = maps.Clone(out[i].Counted)
		if w != nil {
			out[i].UnwatchedCalls = w.Unwatched(i)
		}
	}
	return out
}

// stopHealthWatch stops the health watch and waits for it to return, for
// HealthStopGrace at most: a watch stuck in the driver longer is abandoned,
// which every device's health then says.
func (r *Runtime) stopHealthWatch() {
	if w := r.watch.Load(); w != nil {
		ctx, cancel := context.WithTimeout(context.Background(), HealthStopGrace)
		defer cancel()
		w.Stop(ctx)
	}
}

// HealthWatchAbandoned reports whether Close gave up waiting for the
// backend's health watch, which a driver call held past HealthStopGrace:
// its goroutine is left blocked in the driver.
func (r *Runtime) HealthWatchAbandoned() bool {
	w := r.watch.Load()
	return w != nil && w.Abandoned()
}

// deviceCount is the number of devices, 0 before init.
func (r *Runtime) deviceCount() int {
	if d := r.devices.Load(); d != nil {
		return len(*d)
	}
	return 0
}

// watchAfterInit starts what watches the devices once init has found them:
// the call watch, and the backend's health watch with the record of losses.
func (r *Runtime) watchAfterInit(b driver.Backend, n int) {
	r.startWatching(n)
	w := healthwatch.New(r.Name(), n, r.republish)
	if !r.watch.CompareAndSwap(nil, w) {
		return
	}
	r.republish()
	if !r.stop.closed.Load() {
		w.Start(b)
	}
}
