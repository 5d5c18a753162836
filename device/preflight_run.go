package device

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/internal/hangcheck"
)

// PreflightError is a preflight child that gave no answer: it hung past its
// deadline, crashed, or exited without a report. A hung one wraps
// driver.ErrInitHung.
type PreflightError struct {
	Backend string        // the backend it checked
	Command string        // the program run
	Attempt int           // which preflight child of this Runtime's, from 1
	Took    time.Duration // from its start to its end, or to giving up on it
	// Hung: still running at the deadline. Its Stacks then name the driver
	// call it was stuck in (Call), unless it was stuck too deep to print
	// them. Unkillable: still there after SIGKILL, stuck in the kernel; it
	// is left to the kernel and nothing waits for it.
	Hung, Unkillable bool
	Call             string // the driver call the stacks show, such as "cuInit"
	Stacks           string // gpuinit's goroutines of its dump
	Signal           string // the signal that ended it, such as "SIGSEGV"
	ExitCode         int    // its exit status; -1 when a signal ended it
	Stderr           string // the tail of its stderr
	NoReport         bool   // it exited without a report: not a program that serves the preflight
}

// Error says what the child did, with the call it hung in or the signal that
// ended it.
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
	if tail := lastLines(e.Stderr, 3); tail != "" && !e.Hung {
		what += ": " + tail
	}
	return what
}

// Is reports driver.ErrInitHung for a child that hung.
func (e *PreflightError) Is(target error) bool { return e.Hung && target == driver.ErrInitHung }

// Crashed reports a child that a signal ended, or that reported a fatal
// signal of its own (a Go child's crash in C code exits with status 2).
func (e *PreflightError) Crashed() bool { return e.Signal != "" }

// The bounds on one child beyond its deadline.
const (
	preflightGrace  = 2 * time.Second // SIGQUIT to SIGKILL: enough for a Go child's stacks
	preflightReap   = 2 * time.Second // SIGKILL to giving up on it
	preflightOutput = 64 << 10        // the tail of its stdout and stderr kept
	reportLimit     = 1 << 20
	// reportExit is how long a child that has written its report may take
	// to exit before it is killed: a driver may hang in its teardown too.
	reportExit = time.Second
)

// runPreflight runs one preflight child for reg and returns what it found:
// its report, or the *PreflightError of one that gave none, or the error
// the child's driver returned, rebuilt. It never waits for the child longer
// than p.Deadline and the bounds above.
func runPreflight(ctx context.Context, p Preflight, reg driver.Registration, attempt int) (report, error) {
	command := p.Command
	if len(command) == 0 {
		if !servesPreflight.Load() {
			return report{}, fmt.Errorf("device: %s: the preflight's default child is this executable, which does not serve the preflight: "+
				"import github.com/gpuinit/gpuinit/device/backends, or call device.ServePreflight first in main, or name a program that does in Preflight.Command",
				reg.Name)
		}
		self, err := selfExecutable()
		if err != nil {
			return report{}, fmt.Errorf("device: %s: the preflight cannot find this process's executable: %w; name one in Preflight.Command", reg.Name, err)
		}
		command = []string{self}
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return report{}, fmt.Errorf("device: %s: making the preflight's pipe: %w", reg.Name, err)
	}
	defer rd.Close()
	cmd := exec.Command(command[0], command[1:]...)
	if len(p.Command) == 0 {
		cmd.Args[0] = os.Args[0] // ps shows the server's name, not /proc/self/exe
	}
	// The child must not run preflights of its own, should it reach main.
	cmd.Env = append(os.Environ(), EnvPreflightChild+"="+reg.Name, EnvPreflight+"=off")
	cmd.ExtraFiles = []*os.File{wr} // the child's descriptor 3
	cmd.WaitDelay = time.Second     // a grandchild holding its stderr must not hold the parent

	// Read the report as it comes: once it is complete the child has
	// nothing left to say, and is not waited for past reportExit.
	type decoded struct {
		rep report
		err error
	}
	got := make(chan decoded, 1)
	reported := make(chan struct{})
	go func() { // ends at EOF, or when rd is closed on return
		rep, err := readReport(rd, reportLimit)
		if err == nil {
			close(reported)
		}
		got <- decoded{rep, err}
	}()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var watch sync.WaitGroup
	watch.Go(func() {
		select {
		case <-reported:
			t := time.NewTimer(reportExit)
			defer t.Stop()
			select {
			case <-t.C:
				stop()
			case <-runCtx.Done():
			}
		case <-runCtx.Done():
		}
	})
	res, runErr := hangcheck.RunWith(runCtx, cmd, hangcheck.Limits{
		Timeout: p.Deadline, Grace: preflightGrace, Reap: preflightReap, MaxOutput: preflightOutput,
		Started: func() { wr.Close() },
	})
	wr.Close() // if it never started
	stop()
	watch.Wait()
	// The child is gone, so its end of the pipe is closed and the reader has
	// the report or EOF, unless something the child left holds the pipe.
	var d decoded
	select {
	case d = <-got:
	case <-time.After(reportExit):
		d.err = errors.New("no report: the pipe stayed open")
	}
	if d.err == nil {
		if d.rep.Error != nil {
			return d.rep, fmt.Errorf("preflight child %d: %w", attempt, d.rep.Error.rebuild())
		}
		return d.rep, nil
	}
	if runErr != nil && ctx.Err() == nil && !errors.Is(runErr, context.Canceled) {
		return report{}, fmt.Errorf("device: %s: preflight child %d: %w", reg.Name, attempt, runErr)
	}
	if ctx.Err() != nil {
		return report{}, ctx.Err()
	}
	pe := &PreflightError{Backend: reg.Name, Command: strings.Join(cmd.Args, " "), Attempt: attempt, Took: res.Duration,
		Hung: res.Verdict == hangcheck.Hang, Unkillable: res.Unreaped, ExitCode: res.ExitCode, Stderr: res.Stderr}
	if res.Signal != 0 {
		pe.Signal = signalName(res.Signal)
	} else if m := fatalSignal.FindStringSubmatch(res.Stderr); m != nil && !pe.Hung {
		pe.Signal = m[1] + m[2]
	}
	if pe.Hung {
		pe.Stacks = hangcheck.Goroutines(res.Stderr, 12, "gpuinit/")
		if m := cgoCall.FindStringSubmatch(res.Stderr); m != nil {
			pe.Call = m[1]
		}
	}
	pe.NoReport = !pe.Hung && pe.Signal == "" && res.ExitCode == 0
	return report{}, pe
}

// procSelfExe is Linux's link to this process's executable file. Exec'd
// through it, the child is the running binary even after a rolling upgrade
// removed or replaced the file at os.Executable's path.
var procSelfExe = "/proc/self/exe"

// selfExecutable is what the default child runs: this process's own binary.
func selfExecutable() (string, error) {
	if _, err := os.Stat(procSelfExe); err == nil {
		return procSelfExe, nil
	}
	return os.Executable()
}

var (
	// cgoCall finds the C function a goroutine dump shows a call into, as cgo
	// names it: _Cfunc_gpuinit_cuInit is the shim's wrapper of cuInit.
	cgoCall = regexp.MustCompile(`_Cfunc_(?:gpuinit_)?(\w+)`)
	// fatalSignal finds the signal a Go child reports when it crashed:
	// "SIGSEGV: segmentation violation" for a fault in C code, "[signal
	// SIGSEGV: ...]" for one in Go.
	fatalSignal = regexp.MustCompile(`(?m)^(SIG[A-Z]+): |\[signal (SIG[A-Z]+)`)
)

// signalName spells a signal as its constant: "SIGSEGV".
func signalName(sig syscall.Signal) string {
	names := map[syscall.Signal]string{syscall.SIGSEGV: "SIGSEGV", syscall.SIGBUS: "SIGBUS", syscall.SIGABRT: "SIGABRT",
		syscall.SIGILL: "SIGILL", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM",
		syscall.SIGQUIT: "SIGQUIT", syscall.SIGTRAP: "SIGTRAP"}
	if n, ok := names[sig]; ok {
		return n
	}
	return fmt.Sprintf("signal %d (%s)", int(sig), sig)
}

// lastLines returns the last n non-empty lines of s, joined by " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	var keep []string
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append([]string{l}, keep...)
		}
	}
	return strings.Join(keep, " | ")
}
