package device

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/preflight"
)

// PreflightError is a preflight child that gave no answer. It hung past its
// deadline, crashed, panicked, or exited without a report. A hung one matches
// [driver.ErrInitHung] with errors.Is.
type PreflightError struct {
	Backend string        // the backend it checked
	Command string        // the program run
	Attempt int           // which preflight child of this Runtime's, from 1
	Took    time.Duration // from its start to its end, or to giving up on it
	// Hung means it was still running at the deadline. Its Stacks then name
	// the driver call it was stuck in (Call), unless it was stuck too deep
	// to print them. Unkillable means it was still there after SIGKILL,
	// stuck in the kernel. It is left to the kernel; nothing waits for it.
	Hung, Unkillable bool
	Call             string // the driver call the stacks show, such as "cuInit"
	Stacks           string // gpuinit's goroutines of its dump
	Signal           string // the signal that ended it, such as "SIGSEGV"
	ExitCode         int    // its exit status; -1 when a signal ended it
	Stderr           string // the tail of its stderr
	NoReport         bool   // it exited without a report: it does not serve the preflight
	// Report is the Go runtime's own account of the child's death, before
	// its stacks: "panic: ..." (Panicked), "fatal error: ...", or "SIGSEGV:
	// segmentation violation" and what follows. Frame is the frame that
	// panicked or crashed, below the runtime's own. Its file is named as
	// -trimpath would, never by the build machine's path:
	// "sim.(*Backend).Init at github.com/gpuinit/gpuinit/device/sim/sim.go:188".
	Report   string
	Panicked bool
	Frame    string
}

// Error says what the child did. It names the call it hung or crashed in,
// the signal that ended it, or the panic and the frame that panicked.
func (e *PreflightError) Error() string {
	what := fmt.Sprintf("device: %s: preflight child %d (%s)", e.Backend, e.Attempt, e.Command)
	switch {
	case e.Hung && e.Unkillable:
		what += fmt.Sprintf(" hung for %s, and could not be killed: it is stuck in the kernel driver", e.Took.Round(time.Millisecond))
	case e.Hung:
		what += fmt.Sprintf(" hung: no answer within %s", e.Took.Round(time.Millisecond))
	case e.Panicked:
		if e.Frame != "" {
			what += " panicked in " + e.Frame
		} else {
			what += " panicked"
		}
		return what + ": " + e.Report
	case e.NoReport:
		what += fmt.Sprintf(" exited with status %d without a report: is it a program that serves the preflight (imports device/backends, or calls device.ServePreflight)?", e.ExitCode)
	case e.Signal != "":
		what += " crashed with " + e.Signal
	default:
		what += fmt.Sprintf(" exited with status %d without a report", e.ExitCode)
	}
	if e.Call != "" {
		what += ", in " + e.Call
	} else if e.Frame != "" && !e.Hung {
		what += ", in " + e.Frame
	}
	switch {
	case e.Hung: // its Stacks say where
	case e.Report != "":
		what += ": " + e.Report
	default: // not the Go runtime's words: the driver's own, or another program's
		if tail := preflight.LastLines(e.Stderr, 3); tail != "" {
			what += ": " + tail
		}
	}
	return what
}

// Is reports driver.ErrInitHung for a child that hung.
func (e *PreflightError) Is(target error) bool { return e.Hung && target == driver.ErrInitHung }

// Crashed reports whether the child crashed: a signal ended it, or it
// reported a fatal signal of its own, as a Go child does for a fault or an
// abort in C code (and exits with status 2). A Go panic is not a crash,
// even where GOTRACEBACK=crash ends it with SIGABRT: code that ran in the
// child panicked (see the class table).
func (e *PreflightError) Crashed() bool { return e.Signal != "" && !e.Panicked }

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
