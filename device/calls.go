package device

import (
	"fmt"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/callwatch"
)

// DefaultCallDeadline is how long a call into a device's driver after init
// (Do's function, a generator's draw, MemoryInfo) may run before the device
// is taken as hung.
const DefaultCallDeadline = 60 * time.Second

// The names of the calls the Runtime watches, kept as variables so that a
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

// SetCallDeadline sets how long a call into a device's driver after init may
// run before the device is taken as hung (DefaultCallDeadline unless set):
// Do's function, a generator's calls, Memory. Zero or less turns the watch
// off. It may be called at any time, from any goroutine, before Init or
// after, and turns the watch on or off either way; calls in flight are held
// to the new deadline from the watch's next look.
func (r *Runtime) SetCallDeadline(d time.Duration) {
	if d <= 0 {
		d = -1 // off; 0 stays "not set"
	}
	r.callDeadline.Store(int64(d))
	if w := r.calls.Load(); w != nil {
		w.SetDeadline(max(d, 0))
	}
}

// callDeadlineNow is the deadline calls are held to; 0 when the watch is
// off.
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
// initialization has found them, with the watch off or on: SetCallDeadline
// can turn it on later. The Runtime owns it: Shutdown stops it.
func (r *Runtime) startWatching(n int) {
	if r.stop.closed.Load() {
		return
	}
	w := callwatch.New(n, r.callDeadlineNow(), r.hung, func(int) { r.republish() })
	if !r.calls.CompareAndSwap(nil, w) {
		w.Close()
		return
	}
	// A SetCallDeadline between the read above and the store saw no watch:
	// read again now that it can see this one.
	w.SetDeadline(r.callDeadlineNow())
	if r.stop.closed.Load() { // Shutdown ran meanwhile and may have missed w
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

// watched runs fn as the call op on device ordinal: refused with the
// device's LostDevice if it is lost, else under the call deadline.
func (r *Runtime) watched(ordinal int, op *string, fn func() error) error {
	if lost, ok := r.findLost(ordinal); ok {
		return lost
	}
	if !r.inFlight.enter() {
		return ErrClosed
	}
	defer r.inFlight.leave()
	w := r.calls.Load()
	if w == nil {
		return fn()
	}
	s := w.Begin(ordinal, op)
	defer w.End(s)
	return fn()
}
