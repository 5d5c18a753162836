package watch

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// CallSlots is how many calls per device are watched at once; more run
// unwatched, and are counted (Unwatched).
const CallSlots = 64

// CallSlot is one watched call. Its state is odd while a call holds it, and a
// new odd value each time, so that the monitor tells one long call from two
// short ones without a clock read on the call's path.
type CallSlot struct {
	state atomic.Uint64
	op    atomic.Pointer[string]
	_     [48]byte // one call's slot per cache line
}

// callDevice is one device's watched calls.
type callDevice struct {
	slots     [CallSlots]CallSlot
	unwatched atomic.Int64 // calls that found every slot taken
}

// CallWatch watches the calls of a Runtime's devices. Its methods are safe for
// concurrent use.
type CallWatch struct {
	deadline atomic.Int64 // nanoseconds; 0 or less: off
	devices  []callDevice
	active   atomic.Bool   // some call may be in flight: the monitor scans
	wake     chan struct{} // a call found the monitor asleep; buffered, one token
	hung     func(ordinal int, op string, took, deadline time.Duration)
	overflow func(ordinal int) // a call found every slot taken

	stop chan struct{} // closed by Close
	done chan struct{} // closed when the monitor has returned
	once sync.Once
}

// NewCallWatch watches n devices' calls under deadline (0 or less: off until
// SetDeadline) and starts the monitor. hung is called from the monitor's
// goroutine for each call past the deadline, once per call; overflow, if not
// nil, from a call's own goroutine when it found every slot of its device
// taken and runs unwatched. Neither may block. Close stops the monitor.
func NewCallWatch(n int, deadline time.Duration, hung func(ordinal int, op string, took, deadline time.Duration), overflow func(ordinal int)) *CallWatch {
	w := &CallWatch{devices: make([]callDevice, n), wake: make(chan struct{}, 1), hung: hung, overflow: overflow,
		stop: make(chan struct{}), done: make(chan struct{})}
	w.SetDeadline(deadline)
	go w.monitor()
	return w
}

// interval is how often the monitor scans while calls are in flight: a
// quarter of the deadline, at most 25 ms.
func interval(deadline time.Duration) time.Duration {
	return min(deadline/4, 25*time.Millisecond)
}

// SetDeadline holds calls to d (0 or less: off) from the monitor's next
// look, waking it so that a call already in flight is looked at too.
func (w *CallWatch) SetDeadline(d time.Duration) {
	w.deadline.Store(int64(d))
	if d > 0 {
		w.active.Store(true)
		w.poke()
	}
}

// Deadline is the deadline calls are held to; 0 or less when off.
func (w *CallWatch) Deadline() time.Duration { return time.Duration(w.deadline.Load()) }

func (w *CallWatch) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Begin takes a slot for call op on device ordinal and returns it, or nil
// where every slot was taken (the call is then counted as unwatched). op
// must stay valid: a variable per call name, so that no call allocates.
func (w *CallWatch) Begin(ordinal int, op *string) *CallSlot {
	d := &w.devices[ordinal]
	start := rand.N(uint32(CallSlots))
	for i := uint32(0); i < CallSlots; i++ {
		s := &d.slots[(start+i)%CallSlots]
		v := s.state.Load()
		if v%2 == 0 && s.state.CompareAndSwap(v, v+1) {
			s.op.Store(op)
			if !w.active.Load() && w.active.CompareAndSwap(false, true) {
				w.poke()
			}
			return s
		}
	}
	d.unwatched.Add(1)
	if w.overflow != nil {
		w.overflow(ordinal)
	}
	return nil
}

// End releases a slot Begin took; nil does nothing.
func (w *CallWatch) End(s *CallSlot) {
	if s != nil {
		s.state.Add(1)
	}
}

// Unwatched reports, per device, how many calls ran without the watch
// because CallSlots calls were in flight on it already.
func (w *CallWatch) Unwatched(ordinal int) int64 { return w.devices[ordinal].unwatched.Load() }

// Scanning reports whether the monitor scans (some call it has not yet
// reported may be in flight) rather than sleeps.
func (w *CallWatch) Scanning() bool { return w.active.Load() }

// Close stops the monitor and waits for it; it is safe to call more than
// once. Calls made after it are not watched.
func (w *CallWatch) Close() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

// seen is what the monitor saw of one busy slot: its state, and since when.
type seen struct {
	state uint64
	since time.Time
}

// monitor scans while calls are in flight and reports each call that has
// held its slot past the deadline, once. A reported call is not looked at
// again (it may never return, and its device refuses new calls): the monitor
// sleeps, using no CPU, while nothing but reported calls is in flight.
func (w *CallWatch) monitor() {
	defer close(w.done)
	first := make([][CallSlots]seen, len(w.devices))
	reported := make([][CallSlots]uint64, len(w.devices))
	for {
		if !w.active.Load() {
			select {
			case <-w.wake:
			case <-w.stop:
				return
			}
		}
		deadline := w.Deadline()
		if deadline <= 0 { // off: wait to be woken again
			w.active.Store(false)
			continue
		}
		t := time.NewTimer(interval(deadline))
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
				if took := now.Sub(first[d][i].since); took >= deadline {
					reported[d][i] = v
					op := "a driver call"
					if p := s.op.Load(); p != nil {
						op = *p
					}
					w.hung(d, op, took, deadline)
				}
			}
		}
		if !busy {
			// Nothing in flight but calls already reported: sleep, unless a
			// call began while this scan ran (it found active set and sent
			// nothing).
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
