package watch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
)

// Device is what the watch knows of one device's health.
type Device struct {
	Ordinal     int
	Watched     bool   // its health events are watched; false: unknown, Why says why
	Why         string // why its health is unknown
	Counted     map[string]int64
	Counters    *healthwatch.Counters
	WatchError  string // the watch's last failure, which it retries; "" once it watches again
	WatchErrors int64
	Hint        string // advice the counters call for

	Conditions       []Condition // the driver's verdicts that are not healthy, most severe first
	Recovery         healthwatch.RecoveryAction
	ReplaysPerMinute float64
	Fabric           *healthwatch.FabricState
	Recovered        time.Time // when the driver last said the GPU was reset (recoversLoss)
	HungCall         string    // the watch's driver call past its deadline on the device
	replays          []replaySample
	sources          map[string]string // each source's state: "" watching, else why not
}

// watchedBy records that the backend's source (its healthwatch.KindWatching or
// KindUnwatched event's Name: "ras", "rocm-smi"; "" for a backend of one
// source) watches the device, or why not. The device is watched while any
// source watches it; Why lists the sources that do not, in their order.
func (d *Device) watchedBy(source, whyNot string) {
	if d.sources == nil {
		d.sources = map[string]string{}
	}
	d.sources[source] = whyNot
	d.Watched, d.Why = false, ""
	var whys []string
	for _, k := range slices.Sorted(maps.Keys(d.sources)) {
		if why := d.sources[k]; why == "" {
			d.Watched = true
		} else {
			whys = append(whys, why)
		}
	}
	d.Why = strings.Join(whys, "; ")
}

// persistenceHint is the advice for a GPU without persistence mode.
const persistenceHint = "persistence mode is off: the driver tears the GPU down when no process holds it, so each process's init pays 1-3 s per GPU again (ECC scrubbing; NVIDIA's driver persistence docs): run nvidia-persistenced, or nvidia-smi -pm 1"

// NotStarted is a device's Why from Start until the backend's watch has
// said something of it.
const NotStarted = "unknown: the health watch has not started yet"

// HealthWatch is one Runtime's health watch over its devices. Its methods are safe
// for concurrent use.
type HealthWatch struct {
	backend  string
	n        int
	changed  func()
	deadline func() time.Duration // the Runtime's call deadline now; 0 when off

	mu       sync.Mutex // protects following fields
	devices  []Device
	losses   []Loss        // by ordinal; replaced, never modified, so that snapshots share it
	counts   map[int]int64 // replaced, never modified, so that snapshots share it
	cancel   context.CancelFunc
	done     chan struct{} // closed when the backend's watch has returned
	canceled bool          // Cancel has run: Start starts nothing

	// hung counts the watch's driver calls past their deadline, which
	// Wait does not wait for; hungNow gets a token at each new one.
	hung    atomic.Int32
	hungNow chan struct{}
	hungOp  atomic.Pointer[string] // the last call that went past its deadline

	published atomic.Pointer[Snapshot] // one moment of the fields above, for Snapshot

	// events is held for reading while one event is applied, and for
	// writing while Stop stops applying them, so that no event that passed
	// the check lands after Stop has begun waiting.
	events  sync.RWMutex
	stopped bool // guarded by events

	abandoned atomic.Bool // Stop gave up waiting for done: the goroutine is stuck in the driver
}

// Snapshot is one moment of what the watch knows: a change that touches
// a device's health, its loss and its counts shows in all three at once.
// It is shared and never modified.
type Snapshot struct {
	Devices   []Device      // each device's health, by ordinal
	Losses    []Loss        // the lost devices, by ordinal
	Counts    map[int]int64 // the errors counted per device
	Abandoned bool          // Stop abandoned the watch; the devices' health says so
}

// NewHealthWatch returns the watch of n devices of the named backend, not started:
// every device's health is unknown until Start. changed is called after
// each change of what the watch knows, with no lock held; it must not block.
// deadline is the Runtime's call deadline (0 when off), read at each of the
// watch's driver calls, which it holds to monitorDeadline of it.
func NewHealthWatch(backend string, n int, changed func(), deadline func() time.Duration) *HealthWatch {
	w := &HealthWatch{backend: backend, n: n, changed: changed, deadline: deadline, devices: make([]Device, n),
		hungNow: make(chan struct{}, 1)}
	for i := range w.devices {
		w.devices[i] = Device{Ordinal: i, Why: "unknown: the " + backend + " backend does not watch its devices' health"}
	}
	w.publish()
	return w
}

// Start runs b's health watch, if b has one, on a goroutine Stop stops;
// without one every device's health stays unknown. After Cancel it starts
// nothing: the check and the start are under one lock, so a watch started
// as the Runtime shuts down is never left running.
func (w *HealthWatch) Start(b driver.Backend) {
	hw, ok := driver.Capability[driver.HealthWatcher](b)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctx = healthwatch.WithCallTracker(ctx, tracker{w})
	done := make(chan struct{})
	w.mu.Lock()
	if w.canceled {
		w.mu.Unlock()
		cancel()
		return
	}
	w.cancel, w.done = cancel, done
	for i := range w.devices {
		w.devices[i].Why = NotStarted
	}
	w.publish()
	w.mu.Unlock()
	w.changed()
	// Events the watch reports once told to stop are dropped: Stop may have
	// abandoned it, and its record must not be overwritten by a call that
	// returns later.
	report := func(ev healthwatch.Event) {
		w.events.RLock()
		defer w.events.RUnlock()
		if !w.stopped && ctx.Err() == nil {
			w.apply(ev)
		}
	}
	go func() {
		defer close(done)
		err := hw.WatchHealth(ctx, report)
		if err != nil && ctx.Err() == nil {
			why := "unknown: " + err.Error()
			if !errors.Is(err, driver.ErrNotSupported) {
				why = "unknown: the health watch failed: " + err.Error()
			}
			w.update(-1, func(d *Device) { d.Watched, d.Why, d.sources = false, why, nil })
		}
	}()
}

// Stop is Cancel, then Wait.
func (w *HealthWatch) Stop(ctx context.Context) (abandoned bool) {
	w.Cancel()
	abandoned, _ = w.Wait(ctx)
	return abandoned
}

// Cancel tells the backend's watch to stop and drops the events it reports
// from now on: Stop may abandon it, and its record must not be overwritten
// by a call that returns later. A Start after Cancel starts nothing. Cancel
// does not wait.
func (w *HealthWatch) Cancel() {
	w.mu.Lock()
	w.canceled = true
	cancel := w.cancel
	w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	// An event being applied finishes (Go code, no driver call); none
	// starts after this.
	w.events.Lock()
	w.stopped = true
	w.events.Unlock()
}

// Wait waits for the canceled watch to return. It gives up, and abandons
// the watch, when ctx ends or when one of the watch's driver calls is past
// its deadline: a call known to hang is not waited for. Every device's
// health then says so, and its goroutine stays blocked in the driver, which
// nothing can free. hungIn names the call past its deadline, if that was
// why. Once abandoned, later calls return at once.
func (w *HealthWatch) Wait(ctx context.Context) (abandoned bool, hungIn string) {
	w.mu.Lock()
	done := w.done
	w.mu.Unlock()
	if done == nil {
		return false, ""
	}
	if w.abandoned.Load() {
		return true, w.hungCall()
	}
wait:
	for w.hung.Load() == 0 {
		select {
		case <-done:
			return false, ""
		case <-w.hungNow:
		case <-ctx.Done():
			break wait
		}
	}
	w.mu.Lock()
	select {
	case <-done: // returned meanwhile
		w.mu.Unlock()
		return false, ""
	default:
	}
	if w.abandoned.Swap(true) {
		w.mu.Unlock()
		return true, w.hungCall()
	}
	why := "unknown: the health watch was stopped, but its driver call had not returned when the shutdown's time ran out, so the watch was abandoned (its goroutine stays blocked in the driver, which may be hung: check dmesg for Xid errors)"
	hungIn = w.hungCall()
	if hungIn != "" {
		why = "unknown: the health watch was stopped while its driver call " + hungIn +
			" was past its deadline, so the watch was abandoned at once (its goroutine stays blocked in the driver, which may be hung: check dmesg for Xid errors)"
	}
	for i := range w.devices {
		w.devices[i].Watched, w.devices[i].Why, w.devices[i].sources = false, why, nil
	}
	w.publish()
	w.mu.Unlock()
	w.changed()
	return true, hungIn
}

// hungCall names the watch's driver call past its deadline, or "".
func (w *HealthWatch) hungCall() string {
	if op := w.hungOp.Load(); op != nil && w.hung.Load() > 0 {
		return *op
	}
	return ""
}

// Abandoned reports whether Stop abandoned the watch, without a lock.
func (w *HealthWatch) Abandoned() bool { return w.abandoned.Load() }

// Snapshot is what the watch knows now, in one moment, without a lock.
func (w *HealthWatch) Snapshot() Snapshot { return *w.published.Load() }

// Devices is each device's health: shared, never modified. A reader of
// more than one of Devices, Losses and Counts takes a Snapshot instead.
func (w *HealthWatch) Devices() []Device { return w.published.Load().Devices }

// apply applies one event of the backend's watch: the device's loss, its
// count and its health change in one moment, announced once.
func (w *HealthWatch) apply(ev healthwatch.Event) {
	if ev.Ordinal < 0 || ev.Ordinal >= w.n {
		w.update(ev.Ordinal, func(d *Device) { applyToDevice(d, ev) }) // -1: every device
		return
	}
	w.mu.Lock()
	if ev.Action == healthwatch.Lose {
		source := map[healthwatch.Kind]string{healthwatch.KindXid: "xid", healthwatch.KindECC: "ecc", healthwatch.KindRAS: "ras"}[ev.Kind]
		if source == "" {
			source = string(ev.Kind)
		}
		w.lose(ev.Ordinal, source, &driver.DriverError{Backend: w.backend, Op: eventOp(ev), Code: ev.Code, Name: ev.Name,
			Message: ev.Message, Hint: ev.Hint, Sticky: true})
	}
	if ev.Action == healthwatch.Count {
		w.count(ev.Ordinal)
	}
	applyToDevice(&w.devices[ev.Ordinal], ev)
	w.publish()
	w.mu.Unlock()
	w.changed()
}

// applyToDevice applies ev to the health of its device d.
func applyToDevice(d *Device, ev healthwatch.Event) {
	if applyVerdict(d, ev, time.Now()) {
		return
	}
	switch ev.Kind {
	case healthwatch.KindWatching:
		d.watchedBy(ev.Name, "")
		d.WatchError = ""
	case healthwatch.KindUnwatched:
		d.watchedBy(ev.Name, ev.Message)
	case healthwatch.KindCounters:
		d.Counters, d.WatchError, d.Hint = ev.Counters, "", ""
		if c := ev.Counters; c != nil && c.Persistence != nil && !*c.Persistence {
			d.Hint = persistenceHint
		}
	case healthwatch.KindWatchError:
		d.WatchError = ev.Message
		d.WatchErrors++
	}
	if ev.Action == healthwatch.Count || ev.Action == healthwatch.Lose {
		if d.Counted == nil {
			d.Counted = map[string]int64{}
		}
		n := int64(1)
		if ev.Kind == healthwatch.KindRAS && ev.Code > 0 {
			n = int64(ev.Code) // a rise of the counter by Code errors
		}
		d.Counted[eventOp(ev)] += n
	}
}

// eventOp names an event's kind and code: "xid 79", "ecc uncorrected".
func eventOp(ev healthwatch.Event) string {
	switch ev.Kind {
	case healthwatch.KindXid:
		return fmt.Sprintf("xid %d", ev.Code)
	case healthwatch.KindECC, healthwatch.KindRAS:
		if ev.Name != "" {
			return string(ev.Kind) + " " + ev.Name
		}
	}
	return string(ev.Kind)
}

// update runs f on device ordinal's health, or every device's for -1, and
// publishes the result; an ordinal the watch has not is ignored.
func (w *HealthWatch) update(ordinal int, f func(*Device)) {
	w.mu.Lock()
	switch {
	case ordinal == -1:
		for i := range w.devices {
			f(&w.devices[i])
		}
	case ordinal >= 0 && ordinal < len(w.devices):
		f(&w.devices[ordinal])
	default:
		w.mu.Unlock()
		return
	}
	w.publish()
	w.mu.Unlock()
	w.changed()
}

// publish stores a snapshot of the devices' health, losses and counts for
// Snapshot; w.mu is held.
func (w *HealthWatch) publish() {
	out := slices.Clone(w.devices)
	for i := range out {
		out[i].Counted = maps.Clone(out[i].Counted)
	}
	w.published.Store(&Snapshot{Devices: out, Losses: w.losses, Counts: w.counts, Abandoned: w.abandoned.Load()})
}

// publishLosses is publish where only the losses or counts changed: the
// devices' copy is the last snapshot's, so that counting an error, on a
// call's path, copies no device. w.mu is held.
func (w *HealthWatch) publishLosses() {
	last := w.published.Load()
	w.published.Store(&Snapshot{Devices: last.Devices, Losses: w.losses, Counts: w.counts, Abandoned: last.Abandoned})
}
