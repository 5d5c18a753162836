package device

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/preflight"
)

// envPreflight turns the preflight on or off for every Runtime of the
// process, whatever the code says. A deadline such as "30s" turns it on with
// that deadline for each child. "on" turns it on with the defaults. "off" or
// "0" turns it off. It is read at the first Init. A value that does not parse
// fails that Init, naming the variable.
const envPreflight = "GPUINIT_PREFLIGHT"

// The preflight's defaults, as Preflight's fields state them.
const (
	defaultDeadline   = 30 * time.Second
	defaultRetryFor   = 5 * time.Minute
	defaultBackoff    = time.Second
	defaultMaxBackoff = 30 * time.Second
)

// Preflight configures the child process a Runtime runs before it
// initializes a backend's driver in its own process. A driver that hangs or
// crashes in its init then takes the child down, not the server.
//
// By default the child is the server's own executable, started again. Its
// GPUINIT_PREFLIGHT_CHILD names the backend, and file descriptor 3 is a pipe
// of its own. The child never reaches main. A server imports package
// device/backends to link the backends. Its init function calls
// [ServePreflight]. That runs the backend's Init and device query, writes the
// result to the pipe, and exits. So in the child only package initialization
// runs: the init functions of device/backends' dependencies, and of whatever
// packages Go orders before it. Those dependencies are device, lazy, the
// backends, and their vendor libraries' loaders. main never runs, nor do
// package inits ordered after device/backends.
//
// Only after a child succeeded does the Runtime initialize the driver
// in-process. A backend whose driver is initialized already
// ([driver.InitReporter]) is not preflighted: there is nothing left to
// protect.
//
// A child that hangs past Deadline is sent SIGQUIT, then SIGKILL. The
// SIGQUIT makes its goroutine stacks name the driver call it is stuck in. A
// child that cannot be killed (stuck in the kernel) is reported as such. It
// is left to the kernel, never waited for. A child that crashes (a signal,
// as a fault in the driver's C code gives) is reported with its signal and
// the driver call it was in. A child whose Go code panicked is reported by
// its panic and the frame that panicked; it is [ClassNeedsOperator], not retried,
// since a fresh child panics again. Neither error carries the build
// machine's file paths. Every child dies with the process, even when the
// process is killed with SIGKILL.
//
// A failure of class [ClassNotYet] is retried in a fresh child after Backoff. The
// wait doubles each time, up to MaxBackoff, until RetryFor has passed since
// the first attempt. No in-process init ever fails for a transient reason,
// so nothing becomes final too early.
//
// The cost is a fork and exec of the server's binary, its package inits,
// and the driver's init once more in the child, before the in-process one.
// The child runs with GOMAXPROCS=1, which starts its runtime faster. The
// example server's package doc (examples/server) has the figures.
type Preflight struct {
	// Deadline bounds one child's check, from when it starts, not from its
	// process start, which a loaded machine stretches; 0 is 30 s. A child
	// that has not started its check within its Deadline, or 10 s where
	// that is longer, is hung too.
	Deadline time.Duration
	// RetryFor is how long ClassNotYet failures are retried, from the first
	// attempt. 0 is 5 minutes; negative never retries.
	RetryFor time.Duration
	// Backoff is the wait before the first retry; 0 is 1 s. MaxBackoff caps
	// the wait; 0 is 30 s.
	Backoff, MaxBackoff time.Duration
	// Command is the child to run and its arguments. It must be a program
	// that handles the preflight: it imports device/backends, or calls
	// ServePreflight first. Empty is this process's own executable, with no
	// arguments.
	Command []string
	// Prestart starts the first child at UsePreflight, so that the first
	// Init pays for its check alone, not for its process start (10 ms or
	// more, which a loaded machine stretches). The child runs its package
	// inits, with the environment of then, and waits, touching no driver.
	// Init gives it the backend to check, with the environment and folder
	// of that moment. What a process reads only as it starts stays as it
	// was: LD_LIBRARY_PATH and LD_PRELOAD (the dynamic loader's), GODEBUG
	// and GOTRACEBACK, and what package inits read. It is one idle process
	// until then. Shutdown kills it, and so does an initialization that
	// ends without it. A Runtime dropped without Shutdown leaves it waiting
	// until the process exits. A child that died while it waited is
	// replaced by a cold one. Retries and other backends start cold
	// children. A server whose probes start the initialization seconds
	// after it starts keeps it idle that long.
	Prestart bool
}

// MaxWait is the longest one child can take with p's settings. That is its
// start (its Deadline, or 10 s where that is longer), its Deadline, then the
// time to collect its stacks and stop it. A caller that bounds its own wait
// for Init should allow this per attempt.
func (p Preflight) MaxWait() time.Duration {
	return preflight.MaxWait(p.withDefaults().Deadline)
}

// withDefaults fills p's zero fields.
func (p Preflight) withDefaults() Preflight {
	if p.Deadline <= 0 {
		p.Deadline = defaultDeadline
	}
	switch {
	case p.RetryFor == 0:
		p.RetryFor = defaultRetryFor
	case p.RetryFor < 0:
		p.RetryFor = 0
	}
	if p.Backoff <= 0 {
		p.Backoff = defaultBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = defaultMaxBackoff
	}
	p.MaxBackoff = max(p.MaxBackoff, p.Backoff)
	p.Command = slices.Clone(p.Command)
	return p
}

// UsePreflight turns the preflight on for this Runtime, with p's settings.
// Zero fields take the defaults. It must be called before the first Init.
// Once initialization has read its settings, UsePreflight changes nothing
// and returns an error. After Shutdown it returns [ErrClosed].
//
// GPUINIT_PREFLIGHT, where set, overrides only what it names. "off" turns
// the preflight off. A deadline replaces p.Deadline. "on" changes nothing. A
// value that does not parse is an error here, naming the variable.
//
// With p.Prestart, and the preflight on, it starts the first child now. A
// child that cannot start is no error here: Init starts it again, and
// reports why it cannot. A second call ends the first call's child.
func (r *Runtime) UsePreflight(p Preflight) error {
	if r.closed() {
		return ErrClosed
	}
	effective, err := preflightFromEnv(&p)
	if err != nil {
		return err
	}
	var earlier *preflight.Warm // an earlier call's child, ended once mu is released
	defer func() {
		if earlier != nil {
			closeWarm(earlier)
		}
	}()
	r.settings.mu.Lock()
	defer r.settings.mu.Unlock()
	if r.closed() { // under mu: Shutdown closes, then takes mu to end a pre-started child
		return ErrClosed
	}
	if r.settings.read {
		return errors.New("device: UsePreflight on a runtime that has started initializing: call it before the first Init")
	}
	p.Command = slices.Clone(p.Command)
	r.settings.preflight = &p
	earlier, r.settings.warm = r.settings.warm, nil
	if p.Prestart && effective != nil {
		// A child that cannot start now fails the same way when Init
		// starts it, which reports why.
		r.settings.warm, _ = preflight.Prestart(childOf(*effective, "", 0))
	}
	return nil
}

// childOf is the preflight child p runs for backend's attempt. The child
// must not run preflights of its own, should it reach main.
func childOf(p Preflight, backend string, attempt int) preflight.Child {
	return preflight.Child{Command: p.Command, Backend: backend, Attempt: attempt,
		Deadline: p.Deadline, Env: []string{envPreflight + "=off"}}
}

// closeWarm ends a pre-started child that no initialization used. It has
// touched no driver, so SIGKILL ends it at once; the bound only keeps a
// process the kernel holds from holding its caller.
func closeWarm(w *preflight.Warm) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = w.Close(ctx)
}

// preflightFromEnv applies GPUINIT_PREFLIGHT to the code's setting p (nil:
// off). It returns the preflight to use, with defaults filled, or nil. The
// variable overrides only what it names. The code's other settings, such as
// its RetryFor and its Command, stand.
func preflightFromEnv(p *Preflight) (*Preflight, error) {
	v, set := os.LookupEnv(envPreflight)
	v = strings.TrimSpace(v)
	var base Preflight
	if p != nil {
		base = *p
	}
	switch {
	case !set || v == "":
		if p == nil {
			return nil, nil
		}
	default:
		switch strings.ToLower(v) {
		case "off", "0", "false", "no":
			return nil, nil
		case "on", "true", "yes":
		default:
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("device: %s=%q: want a deadline for each preflight child such as 30s, or on, or off: %w", envPreflight, v, ErrBadSetting)
			}
			base.Deadline = d
		}
	}
	on := base.withDefaults()
	return &on, nil
}

// runPreflight runs one preflight child for reg and returns what it found.
// That is its report, the *PreflightError of a child that gave no answer, or
// the error the child's driver returned, rebuilt. It never waits for the
// child longer than p.Deadline and the preflight's bounds. It uses warm,
// where not nil, if it was started for these settings, and ends it
// otherwise.
func runPreflight(ctx context.Context, p Preflight, reg driver.Registration, attempt int, warm *preflight.Warm) (preflight.Report, error) {
	c := childOf(p, reg.Name, attempt)
	var rep preflight.Report
	var err error
	switch {
	case warm != nil && warm.Matches(c):
		rep, err = warm.Run(ctx, c)
	default:
		if warm != nil { // GPUINIT_PREFLIGHT changed its deadline since
			closeWarm(warm)
		}
		rep, err = preflight.Run(ctx, c)
	}
	var na *preflight.NoAnswer
	switch {
	case err == nil:
		return rep, nil
	case errors.As(err, &na):
		pe := PreflightError(*na) // the same fields: see preflight.NoAnswer
		return rep, &pe
	case rep.Schema != "": // the child answered with its driver's failure: return it as it said it
		return rep, err
	case ctx.Err() != nil:
		return rep, ctx.Err()
	}
	return rep, fmt.Errorf("device: %s: preflight child %d: %w", reg.Name, attempt, err)
}

// ServePreflight makes this process a preflight child if it was started as
// one. It runs the backend's Init and device query, writes what happened to
// the pipe the parent gave it, and exits. Otherwise it returns at once,
// doing nothing.
//
// Package device/backends calls it from its init function. A server that
// imports that package needs no code of its own. A server that registers its
// backends another way calls it first thing in main, after its backends'
// packages have registered them. The child serves DefaultRegistry's
// backends.
func ServePreflight() {
	preflight.Serve(func(name string) preflight.Report { return checkBackend(DefaultRegistry, name) })
}

// checkBackend is the child's work. It opens the backend from g, Inits it,
// and reads its devices.
func checkBackend(g *Registry, name string) preflight.Report {
	rep := preflight.NewReport(name)
	var b driver.Backend
	fail := func(err error) preflight.Report {
		rep.Error = preflight.ErrorOf(err)
		if b != nil && rep.DriverVersion == 0 {
			// A driver that loaded but failed may still say its version.
			// The parent puts it in its account of the failure.
			rep.DriverVersion, _ = b.DriverVersion()
		}
		return rep
	}
	reg, ok := g.lookup(name)
	if !ok || reg.Open == nil {
		// The parent has the backend; this program does not. Whatever the
		// name, it is never "unknown": the parent knows it.
		return fail(fmt.Errorf("device: the preflight child has no %s backend: %w", name, ErrNotCompiled))
	}
	opened, err := g.openBackend(reg)
	if err != nil {
		return fail(err)
	}
	b = opened
	if err := b.Init(context.Background()); err != nil {
		return fail(err)
	}
	rep.DriverVersion, _ = b.DriverVersion()
	n, err := b.Count()
	if err != nil {
		return fail(err)
	}
	if n <= 0 {
		return fail(fmt.Errorf("device: %s: the driver initialized but reports %d devices: %w", name, n, ErrNoDevice))
	}
	for i := range n {
		info, err := b.Device(i)
		if err != nil {
			return fail(err)
		}
		rep.Devices = append(rep.Devices, info.Name)
	}
	return rep
}
