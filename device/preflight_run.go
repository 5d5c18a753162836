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
// deadline, crashed, or exited without a report. A hung one matches
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
}

// Error says what the child did. It names the call it hung in or the signal
// that ended it.
func (e *PreflightError) Error() string {
	what := fmt.Sprintf("device: %s: preflight child %d (%s)", e.Backend, e.Attempt, e.Command)
	switch {
	case e.Hung && e.Unkillable:
		what += fmt.Sprintf(" hung for %s, and could not be killed: it is stuck in the kernel driver", e.Took.Round(time.Millisecond))
	case e.Hung:
		what += fmt.Sprintf(" hung: no answer within %s", e.Took.Round(time.Millisecond))
	case e.NoReport:
		what += fmt.Sprintf(" exited with status %d without a report: is it a program that serves the preflight (imports device/backends, or calls device.ServePreflight)?", e.ExitCode)
	case e.Signal != "":
		what += " crashed with " + e.Signal
	default:
		what += fmt.Sprintf(" exited with status %d without a report", e.ExitCode)
	}
	if e.Call != "" {
		what += ", in " + e.Call
	}
	if tail := preflight.LastLines(e.Stderr, 3); tail != "" && !e.Hung {
		what += ": " + tail
	}
	return what
}

// Is reports driver.ErrInitHung for a child that hung.
func (e *PreflightError) Is(target error) bool { return e.Hung && target == driver.ErrInitHung }

// Crashed reports whether a signal ended the child, or the child reported a
// fatal signal of its own. A Go child's crash in C code exits with status 2.
func (e *PreflightError) Crashed() bool { return e.Signal != "" }

// runPreflight runs one preflight child for reg and returns what it found.
// That is its report, the *PreflightError of a child that gave no answer, or
// the error the child's driver returned, rebuilt. It never waits for the
// child longer than p.Deadline and the preflight's bounds.
func runPreflight(ctx context.Context, p Preflight, reg driver.Registration, attempt int) (preflight.Report, error) {
	// The child must not run preflights of its own, should it reach main.
	rep, err := preflight.Run(ctx, preflight.Child{Command: p.Command, Backend: reg.Name, Attempt: attempt,
		Deadline: p.Deadline, Env: []string{envPreflight + "=off"}})
	var na *preflight.NoAnswer
	switch {
	case err == nil:
		return rep, nil
	case errors.As(err, &na):
		return rep, &PreflightError{Backend: reg.Name, Command: na.Command, Attempt: attempt, Took: na.Took,
			Hung: na.Hung, Unkillable: na.Unkillable, Call: na.Call, Stacks: na.Stacks, Signal: na.Signal,
			ExitCode: na.ExitCode, Stderr: na.Stderr, NoReport: na.NoReport}
	case rep.Schema != "": // the child answered with its driver's failure: return it as it said it
		return rep, err
	case ctx.Err() != nil:
		return rep, ctx.Err()
	}
	return rep, fmt.Errorf("device: %s: preflight child %d: %w", reg.Name, attempt, err)
}
