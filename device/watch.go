package device

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
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

// persistenceHint is the advice for a GPU without persistence mode.
const persistenceHint = "persistence mode is off: the driver tears the GPU down when no process holds it, so each process's init pays 1-3 s per GPU again (ECC scrubbing; NVIDIA's driver persistence docs): run nvidia-persistenced, or nvidia-smi -pm 1"

// HealthStopGrace bounds how long Close waits for the backend's health watch
// to return once told to stop: the cuda watch's NVML wait returns within a
// second (the driver.HealthWatcher contract asks for a few), and this leaves
// a second's margin. A watch still in the driver past it (a wait or a
// counters read that never returns, on a dead GPU) is abandoned, not waited
// for: see Close.
const HealthStopGrace = 2 * time.Second

// healthWatch is a Runtime's run of its backend's health watch.
type healthWatch struct {
	mu        sync.Mutex // protects following fields
	devices   []DeviceHealth
	cancel    context.CancelFunc
	done      chan struct{} // closed when the watch has returned
	abandoned bool          // Close gave up waiting for done: the goroutine is stuck in the driver

	published atomic.Pointer[[]DeviceHealth] // a copy, for Health

	// events is held for reading while one event is applied, and for
	// writing while Close stops applying them, so that no event that passed
	// the check lands after Close has returned.
	events  sync.RWMutex
	stopped bool // guarded by events: no more events are applied
}

// Health reports each device's health as the Runtime's health watch knows
// it, in a slice of the caller's; nil before a successful init. It takes no
// lock the watch holds for long and never calls the backend.
func (r *Runtime) Health() []DeviceHealth {
	p := r.health.published.Load()
	if p == nil {
		return nil
	}
	out := slices.Clone(*p)
	w := r.calls.Load()
	for i := range out {
		out[i].Counted = maps.Clone(out[i].Counted)
		if w != nil && i < r.deviceCount() {
			out[i].UnwatchedCalls = w.Unwatched(i)
		}
	}
	return out
}

// startHealthWatch starts the backend's health watch over n devices, once the
// initialization has found them: on a goroutine the Runtime owns, which
// Close stops. Without a driver.HealthWatcher every device's health is
// unknown.
func (r *Runtime) startHealthWatch(b driver.Backend, n int) {
	h := &r.health
	h.mu.Lock()
	defer h.mu.Unlock()
	h.devices = make([]DeviceHealth, n)
	for i := range h.devices {
		h.devices[i] = DeviceHealth{Ordinal: i, Why: "unknown: the " + r.Name() + " backend does not watch its devices' health"}
	}
	hw, ok := driver.Capability[driver.HealthWatcher](b)
	if !ok || r.stop.closed.Load() {
		h.publish()
		return
	}
	for i := range h.devices {
		h.devices[i].Why = "unknown: the health watch has not started yet"
	}
	h.publish()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	h.cancel, h.done = cancel, done
	// Events the watch reports once told to stop are dropped: Close may
	// have abandoned it, and its record must not be overwritten by a call
	// that returns later.
	report := func(ev driver.HealthEvent) {
		h.events.RLock()
		defer h.events.RUnlock()
		if !h.stopped && ctx.Err() == nil {
			r.onHealthEvent(ev)
		}
	}
	go func() {
		defer close(done)
		err := hw.WatchHealth(ctx, report)
		if err != nil && ctx.Err() == nil {
			why := "unknown: " + err.Error()
			if !errors.Is(err, ErrNotSupported) {
				why = "unknown: the health watch failed: " + err.Error()
			}
			h.update(-1, func(d *DeviceHealth) { d.Watched, d.Why = false, why })
		}
	}()
}

// stopHealthWatch stops the health watch and waits for it to return, for
// HealthStopGrace at most: a watch stuck in the driver longer is abandoned,
// which every device's health then says (Watched false, Why naming it). The
// goroutine stays blocked in the driver call, which nothing can free; once
// abandoned, later calls return at once.
func (r *Runtime) stopHealthWatch() {
	h := &r.health
	h.mu.Lock()
	cancel, done, abandoned := h.cancel, h.done, h.abandoned
	h.mu.Unlock()
	if cancel == nil || abandoned {
		return
	}
	cancel()
	// An event being applied finishes (Go code, no driver call); none
	// starts after this.
	h.events.Lock()
	h.stopped = true
	h.events.Unlock()
	t := time.NewTimer(HealthStopGrace)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-done: // returned meanwhile
		return
	default:
	}
	if h.abandoned {
		return
	}
	h.abandoned = true
	why := fmt.Sprintf("unknown: Close stopped the health watch, but its driver call had not returned %s later, so the watch was abandoned (its goroutine stays blocked in the driver, which may be hung: check dmesg for Xid errors)", HealthStopGrace)
	for i := range h.devices {
		h.devices[i].Watched, h.devices[i].Why = false, why
	}
	h.publish()
}

// HealthWatchAbandoned reports whether Close gave up waiting for the
// backend's health watch, which a driver call held past HealthStopGrace:
// its goroutine is left blocked in the driver.
func (r *Runtime) HealthWatchAbandoned() bool {
	h := &r.health
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.abandoned
}

// onHealthEvent applies one event of the backend's health watch.
func (r *Runtime) onHealthEvent(ev driver.HealthEvent) {
	h := &r.health
	if ev.Action == driver.HealthLose && ev.Ordinal >= 0 && ev.Ordinal < r.deviceCount() {
		source := map[driver.HealthKind]LossSource{driver.HealthXid: LossXid, driver.HealthECC: LossECC, driver.HealthRAS: LossRAS}[ev.Kind]
		if source == "" {
			source = LossSource(ev.Kind)
		}
		r.lose(ev.Ordinal, source, &DriverError{Backend: r.Name(), Op: eventOp(ev), Code: ev.Code, Name: ev.Name,
			Message: ev.Message, Hint: ev.Hint, Sticky: true})
	}
	h.update(ev.Ordinal, func(d *DeviceHealth) {
		switch ev.Kind {
		case driver.HealthWatching:
			d.Watched, d.Why, d.WatchError = true, "", ""
		case driver.HealthUnwatched:
			d.Watched, d.Why = false, ev.Message
		case driver.HealthRead:
			d.Counters, d.WatchError, d.Hint = ev.Counters, "", ""
			if c := ev.Counters; c != nil && c.Persistence != nil && !*c.Persistence {
				d.Hint = persistenceHint
			}
		case driver.HealthWatchError:
			d.WatchError = ev.Message
			d.WatchErrors++
		}
		if ev.Action >= driver.HealthCount {
			if d.Counted == nil {
				d.Counted = map[string]int64{}
			}
			n := int64(1)
			if ev.Kind == driver.HealthRAS && ev.Code > 0 {
				n = int64(ev.Code) // a rise of the counter by Code errors
			}
			d.Counted[eventOp(ev)] += n
		}
	})
	if ev.Action == driver.HealthCount && ev.Ordinal >= 0 && ev.Ordinal < r.deviceCount() {
		r.count(ev.Ordinal)
	}
}

// eventOp names an event's kind and code: "xid 79", "ecc uncorrected".
func eventOp(ev driver.HealthEvent) string {
	switch ev.Kind {
	case driver.HealthXid:
		return fmt.Sprintf("xid %d", ev.Code)
	case driver.HealthECC, driver.HealthRAS:
		if ev.Name != "" {
			return string(ev.Kind) + " " + ev.Name
		}
	}
	return string(ev.Kind)
}

// update runs f on device ordinal's health, or every device's for -1, and
// publishes the result; an ordinal the Runtime has not is ignored.
func (h *healthWatch) update(ordinal int, f func(*DeviceHealth)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case ordinal == -1:
		for i := range h.devices {
			f(&h.devices[i])
		}
	case ordinal >= 0 && ordinal < len(h.devices):
		f(&h.devices[ordinal])
	default:
		return
	}
	h.publish()
}

// publish stores a copy of the devices' health for Health; h.mu is held.
func (h *healthWatch) publish() {
	out := slices.Clone(h.devices)
	for i := range out {
		out[i].Counted = maps.Clone(out[i].Counted)
	}
	h.published.Store(&out)
}

// deviceCount is the number of devices, 0 before init.
func (r *Runtime) deviceCount() int {
	if d := r.devices.Load(); d != nil {
		return len(*d)
	}
	return 0
}

// watchAfterInit starts what watches the devices once init has found them.
func (r *Runtime) watchAfterInit(b driver.Backend, n int) {
	r.startWatching(n)
	r.startHealthWatch(b, n)
}
