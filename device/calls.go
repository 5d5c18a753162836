package device

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
)

// DefaultCallDeadline is how long a call into a device's driver after init
// (Do's function, a generator's draw, MemoryInfo) may run before the device
// is taken as hung.
const DefaultCallDeadline = 60 * time.Second

// callSlots is how many calls per device are watched at once; more run
// unwatched, which Health reports per device (DeviceHealth.UnwatchedCalls).
const callSlots = 64

// callSlot is one watched call: state is odd while a call holds the slot,
// and a new odd value each time, so that the monitor can tell one long call
// from two short ones without a clock read on the call's path.
type callSlot struct {
	state atomic.Uint64
	op    atomic.Pointer[string]
	_     [48]byte // one call's slot per cache line
}

// deviceCalls are one device's watched calls.
type deviceCalls struct {
	slots     [callSlots]callSlot
	unwatched atomic.Int64 // calls that found every slot taken
}

// callWatch watches a Runtime's calls into its devices' drivers: each call
// takes a slot while it runs (two atomic operations and no clock read); a
// monitor goroutine, running only while some call is in flight, looks at the
// slots every interval and takes a device as hung when one call has held its
// slot past the deadline. Readiness then fails within interval of the
// deadline, plus one scan.
type callWatch struct {
	deadline atomic.Int64 // nanoseconds
	devices  []deviceCalls
	active   atomic.Bool   // some call may be in flight: the monitor scans
	wake     chan struct{} // a call found the monitor asleep; buffered, one token

	stop chan struct{} // closed by Close
	done chan struct{} // closed when the monitor has returned
	once sync.Once
}

// watchInterval is how often the monitor scans while calls are in flight:
// a quarter of the deadline, at most 25 ms.
func watchInterval(deadline time.Duration) time.Duration {
	return min(deadline/4, 25*time.Millisecond)
}

// begin takes a slot for a call op on device ordinal and returns it (nil
// where every slot was taken).
func (w *callWatch) begin(ordinal int, op *string) *callSlot {
	d := &w.devices[ordinal]
	start := rand.N(uint32(callSlots))
	for i := uint32(0); i < callSlots; i++ {
		s := &d.slots[(start+i)%callSlots]
		v := s.state.Load()
		if v%2 == 0 && s.state.CompareAndSwap(v, v+1) {
			s.op.Store(op)
			if !w.active.Load() && w.active.CompareAndSwap(false, true) {
				select {
				case w.wake <- struct{}{}:
				default:
				}
			}
			return s
		}
	}
	d.unwatched.Add(1)
	return nil
}

// end releases a slot begin took.
func (w *callWatch) end(s *callSlot) {
	if s != nil {
		s.state.Add(1)
	}
}

// seen is what the monitor saw of one busy slot: its state, and since when.
type seen struct {
	state uint64
	since time.Time
}

// monitor scans while calls are in flight and reports each device whose one
// call has held its slot past the deadline through hung, once per call. A
// call it has reported is not looked at again (it may never return, and its
// device refuses new calls): the monitor sleeps, using no CPU, while nothing
// but reported calls is in flight, and returns at Close.
func (w *callWatch) monitor(hung func(ordinal int, op string, took time.Duration)) {
	defer close(w.done)
	first := make([][callSlots]seen, len(w.devices))
	reported := make([][callSlots]uint64, len(w.devices))
	for {
		if !w.active.Load() {
			select {
			case <-w.wake:
			case <-w.stop:
				return
			}
		}
		deadline := time.Duration(w.deadline.Load())
		if deadline <= 0 { // turned off since: wait to be woken again
			w.active.Store(false)
			continue
		}
		t := time.NewTimer(watchInterval(deadline))
		select {
		case <-t.C:
		case <-w.stop:
			t.Stop()
			return
		}
		now, busy := time.Now(), false
		for d := range w.devices {
			for i := range w.devices[d].slots {
				s := &w.devices[d].slots[i]
				v := s.state.Load()
				if v%2 == 0 || reported[d][i] == v {
					continue
				}
				busy = true
				if first[d][i].state != v {
					first[d][i] = seen{v, now}
					continue
				}
				if took := now.Sub(first[d][i].since); took >= deadline && reported[d][i] != v {
					reported[d][i] = v
					op := "a driver call"
					if p := s.op.Load(); p != nil {
						op = *p
					}
					hung(d, op, took)
				}
			}
		}
		if !busy {
			// Nothing in flight but calls already reported: sleep, unless a
			// call began while this scan ran (it would have found active set
			// and sent nothing).
			w.active.Store(false)
			for d := range w.devices {
				for i := range w.devices[d].slots {
					if v := w.devices[d].slots[i].state.Load(); v%2 == 1 && reported[d][i] != v {
						w.active.Store(true)
					}
				}
			}
		}
	}
}

// close stops the monitor and waits for it.
func (w *callWatch) close() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

// newCallWatch watches n devices' calls under deadline; its monitor is not
// started.
func newCallWatch(n int, deadline time.Duration) *callWatch {
	w := &callWatch{devices: make([]deviceCalls, n), wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	w.deadline.Store(int64(deadline))
	return w
}

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
// Do's function, a generator's calls, MemoryInfo. Zero or less turns the
// watch off. It may be called at any time, from any goroutine, before Init
// or after, and turns the watch on or off either way; calls in flight are
// held to the new deadline from the monitor's next look.
func (r *Runtime) SetCallDeadline(d time.Duration) {
	if d <= 0 {
		d = -1 // off; 0 stays "not set"
	}
	r.callDeadline.Store(int64(d))
	if w := r.calls.Load(); w != nil {
		w.setDeadline(max(d, 0))
	}
}

// setDeadline holds calls to d from the monitor's next look, waking it so
// that a call already in flight is looked at too.
func (w *callWatch) setDeadline(d time.Duration) {
	w.deadline.Store(int64(d))
	if d > 0 {
		w.active.Store(true)
		select {
		case w.wake <- struct{}{}:
		default:
		}
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

// startWatching starts the call monitor over n devices, once the
// initialization has found them, with the watch off or on: SetCallDeadline
// can turn it on later. The Runtime owns it: Close stops it.
func (r *Runtime) startWatching(n int) {
	if r.stop.closed.Load() {
		return
	}
	w := newCallWatch(n, r.callDeadlineNow())
	if !r.calls.CompareAndSwap(nil, w) {
		return
	}
	// A SetCallDeadline between the read above and the store saw no watch:
	// read again now that it can see this one.
	w.setDeadline(r.callDeadlineNow())
	defer func() {
		if r.stop.closed.Load() { // Close ran meanwhile and may have missed w
			w.close()
		}
	}()
	go w.monitor(func(ordinal int, op string, took time.Duration) {
		r.lose(ordinal, LossDeadline, &DriverError{Backend: r.Name(), Op: op, Name: "call past its deadline",
			Message:  fmt.Sprintf("%s on device %d has run for %s, past the call deadline of %s", op, ordinal, took.Round(time.Millisecond), time.Duration(w.deadline.Load())),
			Sentinel: driver.ErrDeviceHung,
			Hint:     "the driver call has not returned: the GPU may be hung (check dmesg for Xid errors); the thread in it cannot be freed, so restart the process"})
	})
}

// watched runs fn as the call op on device ordinal: refused with the
// device's LostDevice if it is lost, else under the call deadline.
func (r *Runtime) watched(ordinal int, op *string, fn func() error) error {
	if lost, ok := r.lost.find(ordinal); ok {
		return lost
	}
	w := r.calls.Load()
	if w == nil {
		return fn()
	}
	s := w.begin(ordinal, op)
	defer w.end(s)
	return fn()
}

// Close stops what the Runtime runs in the background (the preflight, the
// call monitor, the driver's health watch) and waits for it, never for a
// driver call in flight: it returns within HealthStopGrace, and within the
// preflight's bounds on killing a child. A preflight child under way is
// killed and a wait between attempts ends; the initialization then fails
// with ErrClosed, and none starts or goes on in this process after Close. A health watch still in a driver
// call by then (an NVML wait or counters read that never returns, on a dead
// GPU) is abandoned rather than waited for: its goroutine stays blocked in
// the driver, HealthWatchAbandoned reports it, and every device's Health
// says so; events it reports after Close are dropped. The devices stay as
// they are; calls made after Close are no longer watched. Close is safe to
// call more than once and from many goroutines; once a watch is abandoned,
// later calls return at once.
func (r *Runtime) Close() error {
	r.stop.close()
	if w := r.calls.Load(); w != nil {
		w.close()
	}
	r.stopHealthWatch()
	return nil
}
