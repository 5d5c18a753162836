package device

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/lazy"
)

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

// moveTo stores the next BringUp: b with the phase, backend and summary set.
func (r *Runtime) moveTo(b BringUp, phase Phase, backend string) BringUp {
	b.Phase, b.Since, b.Backend = phase, time.Now(), backend
	switch phase {
	case PhaseDriver:
		if b.InProcess.IsZero() {
			b.InProcess = b.Since
		}
	case PhasePreflight, PhaseWaiting:
		// An in-process part that returned wedged nothing: auto passed that
		// backend over. Another process runs now, or nothing does.
		b.InProcess = time.Time{}
	}
	b.Summary = b.summary()
	r.bringUp.Store(&b)
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

// bringUpFirst is initialize's work, until a candidate is up or none is.
func (r *Runtime) bringUpFirst(ctx context.Context) error {
	b := r.moveTo(BringUp{}, "", "")
	floors, preflight, err := r.readSettings()
	if err != nil {
		return &classified{err: err, class: NeedsOperator}
	}
	seen := readVisibility()
	r.visibility.Store(&seen)
	b.Preflight = preflight != nil
	start := time.Now()
	var backoff time.Duration
	if preflight != nil {
		backoff = preflight.Backoff
	}
	failures := map[string]error{}
	pending := r.candidates
	for {
		var retry []driver.Registration
		for _, reg := range pending {
			var inChild bool
			var c *choice
			var devices []Info
			b, c, devices, inChild, err = r.tryCandidate(ctx, b, reg, floors[reg.Name], preflight)
			if err == nil && r.closed() {
				// The driver's init in this process outlasted Shutdown: start nothing.
				err = ErrClosed
			}
			if errors.Is(err, ErrClosed) {
				r.moveTo(b, "", "")
				return ErrClosed
			}
			if err == nil {
				delete(failures, reg.Name) // an earlier attempt's not-yet failure is moot now
				r.devices.Store(&devices)
				r.chosen.Store(c)
				r.watchAfterInit(c.backend, len(devices))
				if r.auto {
					r.registry.runtimes.add(reg.Name, r)
					r.notePresentVendors(reg.Name, failures)
				}
				r.moveTo(b, PhaseQueued, reg.Name)
				return nil
			}
			err = classify(reg, err)
			failures[reg.Name] = err
			b.LastErr, b.LastClass = err, ClassOf(err)
			if r.auto {
				r.storePassedOver(failures)
			}
			if inChild && b.LastClass == NotYet {
				retry = append(retry, reg)
			}
		}
		// Only a child's failure is retried, so preflight is on here.
		if len(retry) == 0 || retryClock(start)+backoff > preflight.RetryFor {
			r.moveTo(b, "", "")
			return r.finalError(failures, retry, b.Attempts, retryClock(start), preflight)
		}
		b.Next = time.Now().Add(backoff)
		b = r.moveTo(b, PhaseWaiting, retry[0].Name)
		retryWait(ctx, backoff)
		if r.closed() {
			return ErrClosed
		}
		b.Next = time.Time{}
		backoff = min(2*backoff, preflight.MaxBackoff)
		pending = retry
	}
}

// tryCandidate brings reg's backend up. It goes through a preflight child
// first when preflight is on and the driver is not initialized in this
// process already. Then it brings the backend up in-process. inChild reports
// a failure the child saw. Such a failure leaves this process's driver
// untouched, so the backend can be tried again.
func (r *Runtime) tryCandidate(ctx context.Context, b BringUp, reg driver.Registration, floor int, preflight *Preflight) (
	_ BringUp, c *choice, devices []Info, inChild bool, err error) {
	if c = r.chosen.Load(); c == nil {
		backend, err := r.registry.openBackend(reg)
		if err != nil {
			return b, nil, nil, false, err
		}
		c = &choice{reg: reg, backend: backend}
	}
	if preflight != nil && !driverInitialized(c.backend) {
		b.Attempts++
		b = r.moveTo(b, PhasePreflight, reg.Name)
		rep, err := runPreflight(ctx, *preflight, reg, b.Attempts)
		if r.closed() {
			return b, nil, nil, false, ErrClosed // the child was killed, or answered too late
		}
		if rep.DriverVersion != 0 {
			r.driverVersions.Store(reg.Name, rep.DriverVersion)
		}
		if errors.Is(err, ErrNotCompiled) {
			// This process has the backend, so the child's answer is about
			// the child, not the host. It is never "no GPU here".
			return b, nil, nil, false, fmt.Errorf("device: %s: the preflight child says it has no %s backend, which this process has: "+
				"the default child serves the backends that init functions register with DefaultRegistry; register it there from an init function, "+
				"or name a program that has it in Preflight.Command (the child said: %v)", reg.Name, reg.Name, err)
		}
		if err != nil {
			return b, nil, nil, true, err
		}
	}
	if r.closed() {
		return b, nil, nil, false, ErrClosed
	}
	b = r.moveTo(b, PhaseDriver, reg.Name)
	devices, err = bringUpInProcess(ctx, c.backend, reg.Name, floor)
	if v, verr := c.backend.DriverVersion(); err != nil && verr == nil && v != 0 {
		r.driverVersions.Store(reg.Name, v)
	}
	return b, c, devices, false, err
}

// retryWait waits d before the next preflight attempt, or until ctx ends
// (at Shutdown). Tests replace it to see each wait without sleeping.
var retryWait = func(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// retryClock is how long the bring-up has run since start, against the
// preflight's RetryFor. Tests replace it to count the waits alone.
var retryClock = time.Since

// failure is the failure err of backend name, with the driver version it read.
func (r *Runtime) failure(name string, err error) BackendFailure {
	f := BackendFailure{Backend: name, Err: err}
	if v, ok := r.driverVersions.Load(name); ok {
		f.DriverVersion = v.(int)
	}
	return f
}

// driverInitialized reports whether b's driver is initialized in this
// process already. A preflight child then has nothing left to protect.
func driverInitialized(b driver.Backend) bool {
	ir, ok := driver.Capability[driver.InitReporter](b)
	return ok && ir.DriverInitialized()
}

// bringUpInProcess Inits b, checks it against floor, and reads its devices.
func bringUpInProcess(ctx context.Context, b driver.Backend, name string, floor int) ([]Info, error) {
	if err := b.Init(ctx); err != nil {
		return nil, err
	}
	if err := checkDriverFloor(b, name, floor); err != nil {
		return nil, err
	}
	n, err := b.Count()
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, fmt.Errorf("device: %s: the driver initialized but reports %d devices: %w", name, n, ErrNoDevice)
	}
	devices := make([]Info, n)
	for i := range devices {
		if devices[i], err = b.Device(i); err != nil {
			return nil, err
		}
		devices[i].Ordinal = i
	}
	return devices, nil
}

// classify gives a backend's failure its class, as the host shows now. A
// no-device failure's class comes from evidence. The evidence is the
// visibility settings, and whether a GPU device node is given to this
// process. It is kept in the error, since a status must say why "no GPU" or
// "not yet".
func classify(reg driver.Registration, err error) error {
	f := failure{err: err}
	var evidence string
	if reg.Present != nil {
		f.present, evidence = reg.Present()
	}
	if hiding := drivercodes.HidingFor(reg.Visibility); len(hiding) > 0 {
		f.hidden = strings.Join(hiding, " and ")
	}
	c := &classified{err: err, class: classOf(f)}
	if errors.Is(err, ErrNoDevice) && !errors.Is(err, driver.ErrNotReady) && !isPreflightError(err) {
		switch {
		case f.hidden != "" && c.class == NoGPUHere:
			c.evidence = f.hidden + " hides every GPU"
		case c.class == NotYet:
			c.evidence = evidence + ", so the GPU may not be ready yet"
		case evidence != "":
			c.evidence = evidence
		}
	}
	return c
}

func isPreflightError(err error) bool {
	_, ok := err.(*PreflightError)
	return ok
}

// notePresentVendors adds to PassedOver the GPU backends after the chosen
// one whose vendor's devices the host shows, as on a mixed NVIDIA and AMD
// host. Auto chooses one backend per process, so they were never tried. The
// server should know that.
func (r *Runtime) notePresentVendors(chosen string, failures map[string]error) {
	after := false
	for _, reg := range r.candidates {
		if reg.Name == chosen {
			after = true
			continue
		}
		if !after || reg.Present == nil {
			continue
		}
		if present, evidence := reg.Present(); present {
			failures[reg.Name] = fmt.Errorf("device: %s was not tried: the host shows its devices too (%s), and auto chooses one backend per process (%s); open %q beside it, or list both with device.Inventory: %w",
				reg.Name, evidence, chosen, reg.Name, driver.ErrOtherVendor)
		}
	}
	r.storePassedOver(failures)
}

// storePassedOver publishes auto's failures so far, in candidate order.
func (r *Runtime) storePassedOver(failures map[string]error) {
	var passed []BackendFailure
	for _, reg := range r.candidates {
		if err, ok := failures[reg.Name]; ok {
			passed = append(passed, r.failure(reg.Name, err))
		}
	}
	r.passedOver.Store(&passed)
}

// finalError is the initialization's failure. It is the one candidate's, or
// a *NoBackendError of every candidate's, in order. The backends still not
// ready when the preflight's retries ran out say so.
func (r *Runtime) finalError(failures map[string]error, notReady []driver.Registration, attempts int, took time.Duration, p *Preflight) error {
	for _, reg := range notReady {
		if p.RetryFor == 0 {
			break // never retried: the failure says it all
		}
		err := failures[reg.Name]
		failures[reg.Name] = &classified{class: NotYet, err: fmt.Errorf(
			"device: %s was still not ready after %d preflight attempts over %s (not-yet failures are retried for %s): %w",
			reg.Name, attempts, took.Round(time.Millisecond), p.RetryFor, err)}
	}
	var tried []BackendFailure
	for _, reg := range r.candidates {
		tried = append(tried, r.failure(reg.Name, failures[reg.Name]))
	}
	if len(tried) == 1 {
		return tried[0].Err
	}
	return &NoBackendError{Tried: slices.Clip(tried)}
}
