package device

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpuinit/gpuinit/device/internal/preflight"
)

// envPreflight turns the preflight on or off for every Runtime of the process,
// whatever the code says: a deadline such as "30s" turns it on with that
// deadline for each child, "on" turns it on with the defaults, "off" or "0"
// turns it off. It is read at the first Init; a value that does not parse
// fails that Init, naming the variable.
const envPreflight = "GPUINIT_PREFLIGHT"

// The preflight's defaults, as Preflight's fields say them.
const (
	defaultDeadline   = 30 * time.Second
	defaultRetryFor   = 5 * time.Minute
	defaultBackoff    = time.Second
	defaultMaxBackoff = 30 * time.Second
)

// Preflight configures the child process a Runtime runs before it initializes
// a backend's driver in its own process, so that a driver that hangs or
// crashes in its init takes the child down, not the server.
//
// The child is, by default, the server's own executable, started again with
// GPUINIT_PREFLIGHT_CHILD naming the backend and a pipe of its own on file
// descriptor 3. It never reaches main: package device/backends, which a
// server imports to link the backends, calls ServePreflight from its init
// function, which runs the backend's Init and device query, writes the result
// to the pipe and exits. So in the child only package initialization runs:
// the init functions of device/backends' dependencies (device, lazy, the
// backends and their vendor libraries' loaders) and of whatever packages Go
// orders before it; main, and package inits ordered after it, never run.
// Only after a child succeeded does the Runtime initialize the driver
// in-process; one whose driver is initialized already (InitReporter) is not
// preflighted, since there is nothing left to protect.
//
// A child that hangs past Deadline is sent SIGQUIT, so that its goroutine
// stacks name the driver call it is stuck in, then SIGKILL; one that cannot
// be killed (stuck in the kernel) is reported as such and left to the
// kernel, never waited for. A child that crashes is reported with its signal
// and the tail of its stderr. A failure of class NotYet (ClassOf) is retried
// in a fresh child after Backoff, doubled each time up to MaxBackoff, until
// RetryFor has passed since the first attempt; no in-process init ever fails
// for a transient reason, so nothing becomes final too early. Every child
// dies with the process, even when the process is killed with SIGKILL.
//
// What it costs: a fork and exec of the server's binary and the driver's
// init once more, in the child, before the in-process one. See the README
// for the figures.
type Preflight struct {
	// Deadline bounds one child; 0 is 30 s.
	Deadline time.Duration
	// RetryFor is how long NotYet failures are retried, from the first
	// attempt; 0 is 5 minutes, negative never retries.
	RetryFor time.Duration
	// Backoff and MaxBackoff are the wait before the first retry and its
	// cap; 0 is 1 s and 30 s.
	Backoff, MaxBackoff time.Duration
	// Command is the child to run and its arguments: a program that
	// handles the preflight (it imports device/backends, or calls
	// ServePreflight first). Empty is this process's own executable, with
	// no arguments.
	Command []string
}

// MaxWait is the longest one child can take with p's settings: its
// Deadline, then the time to collect its stacks and stop it. A caller that
// bounds its own wait for Init should allow this per attempt.
func (p Preflight) MaxWait() time.Duration {
	return p.withDefaults().Deadline + preflight.Beyond
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

// UsePreflight turns the preflight on for this Runtime, with p's settings
// (zero fields take the defaults). It must be called before the first Init:
// once initialization has read its settings it changes nothing and returns
// an error. GPUINIT_PREFLIGHT, where set, overrides only what it names: off
// turns the preflight off, a deadline replaces p.Deadline, and on changes
// nothing. A value of it that does not parse is an error here, naming it.
func (r *Runtime) UsePreflight(p Preflight) error {
	if r.stop.closed.Load() {
		return ErrClosed
	}
	if _, err := preflightFromEnv(&p); err != nil {
		return err
	}
	r.settings.mu.Lock()
	defer r.settings.mu.Unlock()
	if r.settings.read {
		return errors.New("device: UsePreflight on a runtime that has started initializing: call it before the first Init")
	}
	p.Command = slices.Clone(p.Command)
	r.settings.preflight = &p
	return nil
}

// preflightFromEnv applies GPUINIT_PREFLIGHT to the code's setting p (nil:
// off) and returns the preflight to use, with defaults filled, or nil. The
// variable overrides only what it names, so the code's other settings (its
// RetryFor, its Command) stand.
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
				return nil, fmt.Errorf("%w: %s=%q: want a deadline for each preflight child such as 30s, or on, or off", ErrBadSetting, envPreflight, v)
			}
			base.Deadline = d
		}
	}
	on := base.withDefaults()
	return &on, nil
}
