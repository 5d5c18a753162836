package device

import (
	"fmt"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/watch"
)

// DefaultCallDeadline is how long a call into a device's driver may run
// after init before the device is taken as hung. Such calls are Do's
// function, a generator's draw, and MemoryInfo.
const DefaultCallDeadline = 60 * time.Second

// The names of the calls the Runtime watches. They are variables so that a
// slot can point at one without an allocation per call.
var (
	opDo         = "Do"
	opMemoryInfo = "MemoryInfo"
	opNewGen     = "NewGenerator"
	opSetSeed    = "Generator.SetSeed"
	opSetOffset  = "Generator.SetOffset"
	opGenerate   = "Generator.Generate"
	opCloseGen   = "Generator.Close"
)

// SetCallDeadline sets how long a call into a device's driver may run after
// init before the device is taken as hung. The watched calls are Do's
// function, a generator's calls, and Memory. The deadline is
// [DefaultCallDeadline] unless set. Zero or less turns the watch off.
//
// SetCallDeadline is safe to call from any goroutine, before Init or after.
// It turns the watch on or off either way. Calls in flight are held to the
// new deadline from the watch's next look. A call is timed from when the
// watch first sees it, so one begun while the watch was off gets the whole
// deadline. After [Runtime.Shutdown] it has no effect: the watch has stopped.
func (r *Runtime) SetCallDeadline(d time.Duration) {
	if d <= 0 {
		d = -1 // off; 0 stays "not set"
	}
	r.callDeadline.Store(int64(d))
	if w := r.calls.Load(); w != nil {
		w.SetDeadline(max(d, 0))
	}
}

// callDeadlineNow is the deadline calls are held to; 0 when the watch is off.
func (r *Runtime) callDeadlineNow() time.Duration {
	switch d := r.callDeadline.Load(); {
	case d < 0:
		return 0
	case d > 0:
		return time.Duration(d)
	}
	return DefaultCallDeadline
}

// startWatching starts the call watch over n devices, once the
// initialization has found them. The watch may start off; SetCallDeadline
// can turn it on later. The Runtime owns the watch, and Shutdown stops it.
func (r *Runtime) startWatching(n int) {
	if r.closed() {
		return
	}
	w := watch.NewCallWatch(n, r.callDeadlineNow(), r.hung, func(int) { r.republish() })
	if !r.calls.CompareAndSwap(nil, w) {
		w.Close()
		return
	}
	// A SetCallDeadline between the read above and the store saw no watch:
	// read again now that it can see this one.
	w.SetDeadline(r.callDeadlineNow())
	if r.closed() { // Shutdown ran meanwhile and may have missed w
		w.Close()
	}
}

// hung loses a device whose call has run past the deadline.
func (r *Runtime) hung(ordinal int, op string, took, deadline time.Duration) {
	r.lose(ordinal, LossDeadline, &DriverError{Backend: r.Name(), Op: op, Name: "call past its deadline",
		Message:  fmt.Sprintf("%s on device %d has run for %s, past the call deadline of %s", op, ordinal, took.Round(time.Millisecond), deadline),
		Sentinel: driver.ErrDeviceHung,
		Hint:     "the driver call has not returned: the GPU may be hung (check dmesg for Xid errors); the thread in it cannot be freed, so restart the process"})
}

// watched runs fn as the call op on device ordinal, under the call deadline.
// A lost device refuses it with its LostDevice; after Shutdown it returns
// ErrClosed.
func (r *Runtime) watched(ordinal int, op *string, fn func() error) error {
	if lost, ok := r.findLost(ordinal); ok {
		return lost
	}
	n, ok := r.closing.enterCall(ordinal)
	if !ok {
		return ErrClosed
	}
	defer r.closing.leaveCall(n)
	w := r.calls.Load()
	if w == nil {
		return fn()
	}
	s := w.Begin(ordinal, op)
	defer w.End(s)
	return fn()
}
