package device

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gpuinit/gpuinit/device/internal/watch"
	"github.com/gpuinit/gpuinit/lazy"
)

// Stats is a Runtime's state at one moment, for status pages and health
// checks. It is to a Runtime what [database/sql.DBStats] is to a DB. It says
// where the initialization stands, why it failed, and the backends auto
// passed over. It holds the devices' health and losses, the errors counted,
// the queued calls that failed, and the watches' state.
//
// Its fields are grouped as DBStats's are: the initialization, the devices,
// the queued calls, the shutdown. Its slices, maps and pointed-to structs are
// the caller's own copies, to keep or change. The errors in it are shared,
// as an error returned to many callers is.
type Stats struct {
	// Initialization: where it stands, and how it went.

	// State is where the initialization is: [lazy.Uninitialized],
	// Initializing, Ready or Failed.
	State lazy.State
	// Started and Finished are when the initialization started and
	// finished. Each is zero until then.
	Started, Finished time.Time
	// Running is what the initialization runs now, while it runs. It is
	// "init" for the driver's init, or the call site of queued work.
	// RunningSince is since when.
	Running      string
	RunningSince time.Time
	// Err is the initialization's memoized failure, when State is Failed.
	Err error
	// BringUp is how the initialization went. It holds the phase, the
	// preflight attempts, and the last failure and its class.
	BringUp BringUp
	// PassedOver lists the GPU backends auto tried and passed over before
	// its choice, or before failing. Each has its reason, in the order
	// tried. After its choice, it also lists those auto never tried whose
	// vendor's devices the host shows too. Their reason wraps
	// [driver.ErrOtherVendor]. PassedOver is nil for a Runtime of a named
	// backend.
	PassedOver []BackendFailure
	// Visibility holds the visibility variables that were set when the
	// Runtime initialized, with their values. An empty value hides every
	// device. Visibility is nil before init. Ordinals stay the driver's.
	Visibility map[string]string

	// Devices: what the initialization found, and their health.

	// Devices are the devices the initialization found, by ordinal, as
	// [Runtime.Devices] describes them. It is nil until the driver's init
	// has found them. They stay after Shutdown, which refuses Devices, so
	// that a status page still lists them.
	Devices []Info
	// Health is each device's health, by ordinal. It is nil before a
	// successful init.
	Health []DeviceHealth
	// Lost lists the devices lost, by ordinal.
	Lost []LostDevice
	// ErrorCounts counts the errors reported per device that left it in
	// service.
	ErrorCounts map[int]int64

	// Queued calls that failed when they ran.

	// FailedCalls are the first 16 queued calls that failed when they ran.
	// Each has the call site that queued it. MoreFailedCalls counts the
	// rest. Their failures are their own: the initialization succeeded.
	FailedCalls     []*lazy.DeferredError
	MoreFailedCalls int

	// Shutdown.

	// Closed reports that Shutdown has started. Every call then returns
	// [ErrClosed].
	Closed bool
	// HealthWatchAbandoned reports that Shutdown gave up waiting for the
	// backend's health watch, which a driver call held. Its goroutine is
	// left blocked there.
	HealthWatchAbandoned bool

	changed <-chan struct{} // for Changed
}

// Changed returns a channel that is closed when the devices' health or
// losses next change after this Stats was taken. A feed, such as a DRA
// plugin's health stream, waits on it instead of polling, then takes Stats
// again. Stats taken between two changes return the same channel, so it also
// names the view they show. A Runtime that never initializes never closes it.
func (s Stats) Changed() <-chan struct{} { return s.changed }

// Stats returns the Runtime's state at this moment. It never initializes
// and never calls the backend. It takes no lock. It allocates only the
// copies it returns. Stats is safe for concurrent use. The health handlers
// of package device/health read the same state without the copies, and
// answer without allocating.
func (r *Runtime) Stats() Stats { return r.sharedStats().clone() }

func init() { watch.SetSharedStats((*Runtime).sharedStats) }

// sharedStats is Stats without the copies: its slices and maps are the
// Runtime's own, which it replaces whole at each change and never modifies.
// It allocates nothing, but for the first look at a queued call's site while
// the initialization runs that call. device/health's probes read it,
// through [watch.SharedStats].
func (r *Runtime) sharedStats() Stats {
	s := Stats{State: r.init.State(), BringUp: r.bringUpNow(), Closed: r.closed()}
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
	if p := r.devices.Load(); p != nil {
		s.Devices = *p
	}
	v := r.view.Load()
	s.Lost, s.ErrorCounts, s.Health, s.changed = v.lost, v.counts, v.health, v.changed
	s.FailedCalls, s.MoreFailedCalls = r.failedCalls.snapshot()
	s.HealthWatchAbandoned = v.abandoned // with the devices' health that says so
	return s
}

// clone is s with its own copies of every slice, map and pointed-to struct,
// so that a caller may keep or change them. Errors stay shared.
func (s Stats) clone() Stats {
	s.PassedOver = slices.Clone(s.PassedOver)
	s.Visibility = maps.Clone(s.Visibility)
	s.Devices = slices.Clone(s.Devices)
	for i, d := range s.Devices {
		if d.MIG != nil {
			mig := *d.MIG
			s.Devices[i].MIG = &mig
		}
	}
	s.Health = slices.Clone(s.Health)
	for i := range s.Health {
		s.Health[i] = s.Health[i].clone()
	}
	s.Lost = slices.Clone(s.Lost)
	s.ErrorCounts = maps.Clone(s.ErrorCounts)
	s.FailedCalls = slices.Clone(s.FailedCalls)
	return s
}

// HealthSettled reports whether the health watch has said something of
// every device: that it watches it and has read its counters (or failed
// to), or why it cannot. Until then the watch is starting, and a probe that
// reports health once, such as gpuprobe, waits for it on Changed. It is
// false before a successful init.
func (s Stats) HealthSettled() bool {
	for _, h := range s.Health {
		if !h.settled() {
			return false
		}
	}
	return s.Health != nil
}

// Phase is what a Runtime's initialization is doing.
type Phase string

// The phases, in the order an initialization goes through them. A BringUp's
// Phase is "" when nothing runs, before the initialization starts and once
// it is done.
const (
	PhasePreflight Phase = "preflight" // a preflight child is checking a backend
	PhaseWaiting   Phase = "waiting"   // waiting to retry a backend that is not ready yet
	PhaseDriver    Phase = "driver"    // the driver's init in this process
	PhaseQueued    Phase = "queued"    // the work queued with LazyCall
)

// BringUp is where a Runtime's initialization stands, for health checks and
// status pages. It says what the initialization does now and since when, and
// how its preflight attempts went. A Runtime replaces it whole at each
// change, so a BringUp is one consistent moment.
type BringUp struct {
	Phase   Phase
	Since   time.Time // when Phase began
	Backend string    // the backend being tried, or waited for
	// InProcess is when the part of the initialization that runs in this
	// process began: the driver's init, then the queued work. It is zero
	// until then. Preflight children and the waits between them are not that
	// part. A health check's deadline counts from here. Only this part can
	// wedge the process.
	InProcess time.Time
	// Preflight reports that preflight children run before the driver's
	// init. Attempts counts them, for every backend tried.
	Preflight bool
	Attempts  int
	// LastErr is the last failure of a backend, and LastClass its class.
	// LastErr is nil while none has failed.
	LastErr   error
	LastClass Class
	// Next is when the next attempt starts, in PhaseWaiting.
	Next time.Time
	// Summary says all of it in one line: "initializing: ...". It is made
	// once per change, so that a probe can answer with it without
	// allocating. It is empty before the initialization starts and once it
	// is done.
	Summary string
}

// bringUpNow is where the initialization stands, read without a lock or an
// allocation. It is the zero BringUp before the initialization starts.
func (r *Runtime) bringUpNow() BringUp {
	p := r.bringUp.Load()
	if p == nil {
		return BringUp{}
	}
	b := *p
	// The queued work runs after initialize returns, so its end is lazy's.
	if st := r.init.State(); b.Phase == PhaseQueued && (st == lazy.Ready || st == lazy.Failed) {
		_, finished := r.init.Times()
		b.Phase, b.Since, b.Summary = "", finished, ""
	}
	return b
}

// summary says where b stands as readiness's reason: "initializing: ...".
func (b BringUp) summary() string {
	var s string
	switch b.Phase {
	case PhasePreflight:
		s = fmt.Sprintf("initializing: a preflight child is checking %s (attempt %d)", b.Backend, b.Attempts)
	case PhaseWaiting:
		s = fmt.Sprintf("initializing: %s is not ready yet; attempt %d at %s", b.Backend, b.Attempts+1, b.Next.Format(time.TimeOnly))
	case PhaseDriver:
		s = "initializing: the " + b.Backend + " driver is initializing in this process"
	case PhaseQueued:
		s = "initializing: running the work queued before initialization"
	default:
		return ""
	}
	if b.LastErr != nil && b.Phase != PhaseQueued {
		s += fmt.Sprintf("; last failure (%s): %v", b.LastClass, b.LastErr)
	}
	return s
}
