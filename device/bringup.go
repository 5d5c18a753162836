package device

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/preflight"
)

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

// bringUpFirst is initialize's work, until a candidate is up or none is.
func (r *Runtime) bringUpFirst(ctx context.Context) error {
	u := &bringup{r: r, failures: map[string]error{}, start: time.Now()}
	// A pre-started child that no attempt took has no use left. The defer
	// comes before the settings are read, so that it ends the child
	// whatever happens after readSettings hands it over, a panic included.
	defer func() {
		if u.warm != nil {
			closeWarm(u.warm)
		}
	}()
	if err := u.begin(); err != nil {
		return err
	}
	return u.run(ctx)
}

// bringup is one initialization's way to a ready backend, as a state
// machine. It tries the candidates in order, each through a preflight child
// first where the preflight is on, and waits between the attempts of those
// not ready yet. It is the one source of the phase: each step is a method,
// and each move publishes the BringUp that Stats reads (r.bringUp). Only the
// queued phase's end is lazy's, which bringUpNow reads.
type bringup struct {
	r         *Runtime
	at        BringUp // the phase now, as last published
	floors    map[string]int
	preflight *Preflight       // nil when the preflight is off
	warm      *preflight.Warm  // the pre-started child, until an attempt takes it
	failures  map[string]error // each candidate's last failure
	start     time.Time        // for the preflight's RetryFor
}

// attempt is how one try of a candidate ended: its backend and devices, or
// its failure.
type attempt struct {
	c       *choice
	devices []Info
	err     error
	// inChild reports a failure the preflight child saw. It left this
	// process's driver untouched, so the candidate can be tried again.
	inChild bool
}

// begin reads the settings and the visibility variables, and starts the
// initialization's record. A bad setting fails it, needing an operator.
func (u *bringup) begin() error {
	u.moveTo("", "")
	var err error
	if u.floors, u.preflight, u.warm, err = u.r.readSettings(); err != nil {
		return &failure{class: ClassNeedsOperator, causes: []error{err}}
	}
	seen := readVisibility()
	u.r.visibility.Store(&seen)
	u.at.Preflight = u.preflight != nil
	return nil
}

// run tries the candidates until one is up. Those whose child failed not
// yet are tried again, with capped backoff, until the preflight's RetryFor.
func (u *bringup) run(ctx context.Context) error {
	var backoff time.Duration
	if u.preflight != nil {
		backoff = u.preflight.Backoff
	}
	pending := u.r.candidates
	for {
		var retry []driver.Registration
		for _, reg := range pending {
			a := u.try(ctx, reg)
			switch {
			case errors.Is(a.err, ErrClosed):
				u.moveTo("", "")
				return ErrClosed
			case a.err == nil:
				u.ready(reg, a)
				return nil
			}
			if u.fail(reg, a) {
				retry = append(retry, reg)
			}
		}
		// Only a child's failure is retried, so the preflight is on here.
		if len(retry) == 0 || retryClock(u.start)+backoff > u.preflight.RetryFor {
			u.moveTo("", "")
			return u.finalError(retry)
		}
		if err := u.wait(ctx, retry[0], backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, u.preflight.MaxBackoff)
		pending = retry
	}
}

// moveTo publishes the next phase, of backend.
func (u *bringup) moveTo(phase Phase, backend string) { u.at = u.r.moveTo(u.at, phase, backend) }

// try brings reg's backend up: through a preflight child first when the
// preflight is on and the driver is not initialized in this process
// already, then in this process.
func (u *bringup) try(ctx context.Context, reg driver.Registration) attempt {
	c := u.r.chosen.Load()
	if c == nil {
		backend, err := u.r.registry.openBackend(reg)
		if err != nil {
			return attempt{err: err}
		}
		c = &choice{reg: reg, backend: backend}
	}
	if u.preflight != nil && !driverInitialized(c.backend) {
		if a := u.checkInChild(ctx, reg); a.err != nil {
			return a
		}
	}
	if u.r.closed() {
		return attempt{err: ErrClosed}
	}
	u.moveTo(PhaseDriver, reg.Name)
	devices, err := bringUpInProcess(ctx, c.backend, reg.Name, u.floors[reg.Name])
	if v, verr := c.backend.DriverVersion(); err != nil && verr == nil && v != 0 {
		u.r.driverVersions.Store(reg.Name, v)
	}
	if err == nil && u.r.closed() {
		err = ErrClosed // the driver's init in this process outlasted Shutdown: start nothing
	}
	return attempt{c: c, devices: devices, err: err}
}

// checkInChild runs one preflight child for reg; a zero attempt is its
// success.
func (u *bringup) checkInChild(ctx context.Context, reg driver.Registration) attempt {
	u.at.Attempts++
	u.moveTo(PhasePreflight, reg.Name)
	warm := u.warm // the first child only; the rest start cold
	u.warm = nil
	rep, err := runPreflight(ctx, *u.preflight, reg, u.at.Attempts, warm)
	if u.r.closed() {
		return attempt{err: ErrClosed} // the child was killed, or answered too late
	}
	if rep.DriverVersion != 0 {
		u.r.driverVersions.Store(reg.Name, rep.DriverVersion)
	}
	if errors.Is(err, ErrNotCompiled) {
		// This process has the backend, so the child's answer is about
		// the child, not the host. It is never "no GPU here".
		// It does not wrap the child's ErrNotCompiled, which would say no GPU.
		return attempt{err: fmt.Errorf("device: %s: the preflight child has no %s backend, which this process has: "+
			"the default child serves DefaultRegistry's; register it there from an init function, or name a program that has it in Preflight.Command",
			reg.Name, reg.Name)}
	}
	return attempt{err: err, inChild: err != nil}
}

// ready makes a's backend the Runtime's, and starts watching its devices.
func (u *bringup) ready(reg driver.Registration, a attempt) {
	r := u.r
	delete(u.failures, reg.Name) // an earlier attempt's not-yet failure is moot now
	r.devices.Store(&a.devices)
	r.chosen.Store(a.c)
	r.watchAfterInit(a.c.backend, len(a.devices))
	if r.auto {
		r.registry.runtimes.add(reg.Name, r)
		u.notePresentVendors(reg.Name)
	}
	u.moveTo(PhaseQueued, reg.Name)
}

// fail records a's failure, with its class, and reports whether reg is to
// be tried again: a failure of the child that clears by itself.
func (u *bringup) fail(reg driver.Registration, a attempt) (retry bool) {
	err := classify(reg, a.err)
	u.failures[reg.Name] = err
	u.at.LastErr, u.at.LastClass = err, ClassOf(err)
	if u.r.auto {
		u.storePassedOver()
	}
	return a.inChild && u.at.LastClass == ClassNotYet
}

// wait waits backoff before the next attempt of next, or until ctx ends.
// It fails with ErrClosed when Shutdown ended it.
func (u *bringup) wait(ctx context.Context, next driver.Registration, backoff time.Duration) error {
	u.at.Next = time.Now().Add(backoff)
	u.moveTo(PhaseWaiting, next.Name)
	retryWait(ctx, backoff)
	if u.r.closed() {
		u.moveTo("", "")
		return ErrClosed
	}
	u.at.Next = time.Time{}
	return nil
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

// backendFailure is the failure err of backend name, with the driver
// version it read.
func (r *Runtime) backendFailure(name string, err error) BackendFailure {
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

// notePresentVendors adds to PassedOver the GPU backends after the chosen
// one whose vendor's devices the host shows, as on a mixed NVIDIA and AMD
// host. Auto chooses one backend per process, so they were never tried. The
// server should know that.
func (u *bringup) notePresentVendors(chosen string) {
	after := false
	for _, reg := range u.r.candidates {
		if reg.Name == chosen {
			after = true
			continue
		}
		if !after || reg.Present == nil {
			continue
		}
		if present, evidence := reg.Present(); present {
			u.failures[reg.Name] = fmt.Errorf("device: %s was not tried: the host shows its devices too (%s), and auto chooses one backend per process (%s); open %q beside it, or list both with device.Inventory: %w",
				reg.Name, evidence, chosen, reg.Name, driver.ErrOtherVendor)
		}
	}
	u.storePassedOver()
}

// storePassedOver publishes auto's failures so far, in candidate order.
func (u *bringup) storePassedOver() {
	var passed []BackendFailure
	for _, reg := range u.r.candidates {
		if err, ok := u.failures[reg.Name]; ok {
			passed = append(passed, u.r.backendFailure(reg.Name, err))
		}
	}
	u.r.passedOver.Store(&passed)
}

// finalError is the initialization's failure. It is the one candidate's, or
// a *NoBackendError of every candidate's, in order. The backends still not
// ready when the preflight's retries ran out say so.
func (u *bringup) finalError(notReady []driver.Registration) error {
	r, failures, p := u.r, u.failures, u.preflight
	attempts, took := u.at.Attempts, retryClock(u.start)
	for _, reg := range notReady {
		if p.RetryFor == 0 {
			break // never retried: the failure says it all
		}
		err := failures[reg.Name]
		// The last failure's own prefixes, device's and the backend's, are
		// said once, at the start.
		last := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "device: "), reg.Name+": ")
		retried := &failure{class: ClassNotYet, causes: []error{err}, msg: fmt.Sprintf(
			"device: %s was still not ready after %d preflight attempts over %s (not-yet failures are retried for %s): %s",
			reg.Name, attempts, took.Round(time.Millisecond), p.RetryFor, last)}
		if inner, ok := err.(*failure); ok {
			// It takes the place of the last failure, not a layer above it:
			// its causes, and what the host showed, which a status reads.
			retried.causes, retried.evidence = inner.causes, inner.evidence
		}
		failures[reg.Name] = retried
	}
	if r.auto && len(notReady) > 0 && p.RetryFor > 0 {
		u.storePassedOver() // the status says what Init says
	}
	var tried []BackendFailure
	for _, reg := range r.candidates {
		tried = append(tried, r.backendFailure(reg.Name, failures[reg.Name]))
	}
	if len(tried) == 1 {
		return tried[0].Err
	}
	nb := &NoBackendError{Tried: slices.Clip(tried)}
	f := &failure{msg: nb.Error(), class: ClassOf(nb), causes: []error{nb}}
	var ev interface{ Evidence() string }
	if errors.As(nb.Lead().Err, &ev) {
		f.evidence = ev.Evidence() // the lead's, which its message says
	}
	return f
}
