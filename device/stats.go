package device

import (
	"context"
	"time"

	"github.com/gpuinit/gpuinit/lazy"
)

// Stats is a Runtime's state at one moment, for status pages and health
// checks, as sql.DBStats is a DB's: where the initialization stands, why it
// failed, the backends auto passed over, the devices' health and losses,
// the errors counted, the queued calls that failed, and the watches' state.
//
// Its slices and maps are the Runtime's own, shared with every caller and
// never modified: read them, and copy one before changing it. So Stats takes
// no lock and allocates nothing, and a probe may call it at every request.
type Stats struct {
	// State is where the initialization is: lazy.Uninitialized,
	// Initializing, Ready or Failed.
	State lazy.State
	// Started and Finished are when the initialization started and
	// finished; zero until then.
	Started, Finished time.Time
	// Running is what the initialization runs now, while it runs: "init"
	// for the driver's init, or the call site of queued work. RunningSince
	// is since when.
	Running      string
	RunningSince time.Time
	// Err is the initialization's memoized failure, when State is Failed.
	Err error
	// BringUp is how the initialization went: its phase, its preflight
	// attempts, the last failure and its class.
	BringUp BringUp
	// PassedOver lists the GPU backends auto tried and passed over before
	// its choice (or before failing), each with its reason, in the order
	// tried; and, after its choice, those it never tried whose vendor's
	// devices the host shows too (a reason wrapping driver.ErrOtherVendor).
	// nil for a Runtime of a named backend.
	PassedOver []BackendFailure
	// Visibility holds the visibility variables that were set when the
	// Runtime initialized, with their values (an empty value hides every
	// device); nil before. Ordinals stay the driver's.
	Visibility map[string]string
	// Lost lists the devices lost, by ordinal.
	Lost []LostDevice
	// ErrorCounts counts the errors reported per device that left it in
	// service.
	ErrorCounts map[int]int64
	// Health is each device's health, by ordinal; nil before a successful
	// init.
	Health []DeviceHealth
	// FailedCalls are the queued calls that failed when they ran, each with
	// the call site that queued it, the first 16; MoreFailedCalls counts the
	// rest. Their failures are their own: the initialization succeeded.
	FailedCalls     []*lazy.DeferredError
	MoreFailedCalls int
	// HealthWatchAbandoned reports that Shutdown gave up waiting for the
	// backend's health watch, which a driver call held: its goroutine is
	// left blocked there.
	HealthWatchAbandoned bool
	// Closed reports that Shutdown has started: every call returns
	// ErrClosed.
	Closed bool
	// Changed is closed when the devices' health or losses next change,
	// so that a feed (a DRA plugin's health stream) waits on it instead of
	// polling: take Stats again once it is closed. A Runtime that never
	// initializes never closes it.
	Changed <-chan struct{}
}

// Stats returns the Runtime's state at this moment. It never initializes,
// never calls the backend, takes no lock and allocates nothing (but for the
// first look at a queued call's site while the initialization runs it).
func (r *Runtime) Stats() Stats {
	s := Stats{State: r.init.State(), BringUp: r.bringUpNow(), Closed: r.stop.closed.Load()}
	s.Started, s.Finished = r.init.Times()
	if what, since, ok := r.init.Running(); ok {
		s.Running, s.RunningSince = what, since
	}
	if s.State == lazy.Failed {
		s.Err = r.said(r.init.Init(context.Background())) // memoized: returns at once
	}
	if p := r.passedOver.Load(); p != nil {
		s.PassedOver = *p
	}
	if p := r.visibility.Load(); p != nil {
		s.Visibility = *p
	}
	v := r.view.Load()
	s.Lost, s.ErrorCounts, s.Health, s.Changed = v.lost, v.counts, v.health, v.changed
	s.FailedCalls, s.MoreFailedCalls = r.failedCalls.snapshot()
	if w := r.watch.Load(); w != nil {
		s.HealthWatchAbandoned = w.Abandoned()
	}
	return s
}
