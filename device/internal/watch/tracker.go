package watch

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
)

// MaxMonitorDeadline bounds how long one of the health watch's driver calls
// may run before the device's health is unknown: however long the Runtime's
// call deadline, a monitor that says nothing for this long says nothing.
const MaxMonitorDeadline = 10 * time.Second

// monitorDeadline is the deadline of a watch's driver call: the Runtime's
// call deadline, at most MaxMonitorDeadline, and MaxMonitorDeadline where
// the call deadline is off.
func monitorDeadline(callDeadline time.Duration) time.Duration {
	if callDeadline <= 0 {
		return MaxMonitorDeadline
	}
	return min(callDeadline, MaxMonitorDeadline)
}

// tracker is the healthwatch.CallTracker the watch puts in its backend's
// context: each call arms a timer, which marks the call hung on its device
// (all devices for ordinal -1) if the call has not ended by then; the call's
// end disarms it, or, once hung, clears the mark. A timer uses no goroutine
// while it waits, so the watch costs no CPU between calls.
type tracker struct{ w *HealthWatch }

var _ healthwatch.CallTracker = tracker{}

// Begin marks the start of call op on device ordinal, which may block by
// design for waits before its deadline starts. Safe for concurrent use; it
// never blocks.
func (t tracker) Begin(ordinal int, op string, waits time.Duration) (end func()) {
	w := t.w
	var callDeadline time.Duration
	if w.deadline != nil {
		callDeadline = w.deadline()
	}
	deadline := monitorDeadline(callDeadline)
	start := time.Now()
	// state is callRunning until the call ends or its timer fires, which
	// ever comes first: so a call is marked hung and cleared at most once
	// each, in that order.
	var state atomic.Int32
	timer := time.AfterFunc(max(waits, 0)+deadline, func() {
		if state.CompareAndSwap(callRunning, callHung) {
			w.markHung(ordinal, op, start, max(waits, 0)+deadline)
		}
	})
	return func() {
		if state.CompareAndSwap(callRunning, callEnded) {
			timer.Stop()
			return
		}
		w.clearHung(ordinal, op)
	}
}

// The states of one tracked call.
const (
	callRunning int32 = iota
	callEnded
	callHung
)

// markHung records that call op on device ordinal has run past deadline:
// the device's health is unknown until the call returns, and the watch's
// error says so, once.
func (w *HealthWatch) markHung(ordinal int, op string, start time.Time, deadline time.Duration) {
	w.hungOp.Store(&op)
	w.hung.Add(1)
	select {
	case w.hungNow <- struct{}{}: // Wait gives up on a call known to hang
	default:
	}
	w.events.RLock()
	defer w.events.RUnlock()
	if w.stopped {
		return // Stop's own account of a stuck call stands
	}
	who := fmt.Sprintf("device %d", ordinal)
	if ordinal < 0 {
		who = "every device"
	}
	msg := fmt.Sprintf("the health watch's call %s on %s has not returned after %s (its deadline; since %s): the driver may be hung, so the health is unknown (check dmesg for Xid errors, and nvidia-smi or rocm-smi)",
		op, who, deadline, start.Format(time.TimeOnly))
	w.update(ordinal, func(d *Device) {
		d.HungCall, d.WatchError = op, msg
		d.WatchErrors++
	})
}

// clearHung records that the hung call op returned after all.
func (w *HealthWatch) clearHung(ordinal int, op string) {
	w.hung.Add(-1)
	w.events.RLock()
	defer w.events.RUnlock()
	if w.stopped {
		return
	}
	w.update(ordinal, func(d *Device) {
		if d.HungCall == op {
			d.HungCall = ""
		}
	})
}
