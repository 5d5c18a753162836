package preflight

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpuinit/gpuinit/internal/hangcheck"
)

// The bounds on one child beyond its deadline.
const (
	grace     = 2 * time.Second // SIGQUIT to SIGKILL: enough for a Go child's stacks
	reap      = 2 * time.Second // SIGKILL to giving up on it
	keepBytes = 64 << 10        // the tail of its stdout and stderr kept
	maxReport = 1 << 20
	// reportExit is how long a child that has written its report may take
	// to exit before it is killed: a driver may hang in its teardown too.
	reportExit = time.Second
)

// Beyond is how long past its deadline a child can take at most: the time
// to collect its stacks, kill it, and read what it left.
const Beyond = grace + reap + reportExit

// startBound is the least time a child has to start its check (ArmedLine):
// its process start and package inits, which a loaded machine stretches.
// A child has its deadline for that where the deadline is longer.
const startBound = 10 * time.Second

// StartBound is how long a child with deadline may take to start its check
// before it is judged hung: deadline, or startBound where that is longer.
func StartBound(deadline time.Duration) time.Duration { return max(deadline, startBound) }

// MaxWait is the longest one child with deadline can take: the start of its
// check, the deadline from there, and Beyond.
func MaxWait(deadline time.Duration) time.Duration { return StartBound(deadline) + deadline + Beyond }

// Child is one preflight child to run.
type Child struct {
	Command  []string      // the program and its arguments; empty is this process's own binary
	Backend  string        // the backend it checks
	Attempt  int           // which child of the Runtime's, from 1
	Deadline time.Duration // how long its check may take, from its ArmedLine
	Env      []string      // added to this process's environment
}

// NoAnswer is a child that gave no report: it hung past its deadline,
// crashed, panicked, or exited without one. Its fields are device's
// PreflightError's, in the same order, so that device converts it whole:
// a field added to one and not the other fails the build.
type NoAnswer struct {
	Backend          string        // the backend it checked
	Command          string        // the program run, as ps shows it
	Attempt          int           // which child of the Runtime's, from 1
	Took             time.Duration // from its start to its end, or to giving up on it
	Hung, Unkillable bool          // still running at the deadline; still there after SIGKILL
	Call             string        // the driver call a hung child's stacks show, such as "cuInit"
	Stacks           string        // gpuinit's goroutines of its dump
	Signal           string        // the signal that ended it, such as "SIGSEGV"
	ExitCode         int           // its exit status; -1 when a signal ended it
	Stderr           string        // the tail of its stderr
	NoReport         bool          // it exited 0 without a report: not a program that serves the preflight
	// Report is the Go runtime's own account of the child's death, before
	// its stacks: "panic: ...", "fatal error: ...", or "SIGSEGV:
	// segmentation violation" and what follows. Panicked reports a Go
	// panic. Frame is the frame that panicked or crashed, its file named as
	// -trimpath would. All three are empty for a hung child, whose Stacks say
	// more.
	Report   string
	Panicked bool
	Frame    string
}

func (n *NoAnswer) Error() string { return "preflight: the child gave no answer" }

// procSelfExe is Linux's link to this process's executable file. Exec'd
// through it, the child is the running binary even after a rolling upgrade
// removed or replaced the file at os.Executable's path.
var procSelfExe = "/proc/self/exe"

// self is what the default child runs: this process's own binary.
func self() (string, error) {
	if _, err := os.Stat(procSelfExe); err == nil {
		return procSelfExe, nil
	}
	return os.Executable()
}

// Run runs one child and returns its report. err is the child's own
// failure, rebuilt (a *driver.DriverError where it was one); a *NoAnswer
// for a child that gave none; ctx's error when ctx ended first (the child
// is then killed); or why it could not be started. The deadline counts
// from the child's ArmedLine; a child that has not written it within
// StartBound is hung. Run never waits for the child longer than MaxWait.
func Run(ctx context.Context, c Child) (Report, error) {
	s, err := start(c, c.Backend)
	if err != nil {
		return Report{}, err
	}
	return s.finish(ctx, c)
}

// started is a child that start started: cold, with its backend, or
// pre-started, waiting for its orders.
type started struct {
	p      *hangcheck.Process
	rd     *os.File // the parent's end of the report pipe
	orders *os.File // the parent's end of a pre-started child's orders pipe, until its orders go
	warm   bool     // pre-started: it waits for orders
	args   []string // as ps shows them
}

// end kills the child, unjudged, and waits for it until ctx ends. It closes
// s's pipes.
func (s *started) end(ctx context.Context) error {
	s.rd.Close()
	if s.orders != nil {
		s.orders.Close() // EOF: a child that reads it exits by itself
	}
	return s.p.Stop(ctx)
}

// start starts c's program as a preflight child of backend, or, with
// backend "", as a pre-started child that waits on its descriptor 4 for its
// orders.
func start(c Child, backend string) (*started, error) {
	command := c.Command
	if len(command) == 0 {
		if !Served() {
			return nil, errors.New("the preflight's default child is this executable, which does not serve the preflight: " +
				"import github.com/gpuinit/gpuinit/device/backends, or call device.ServePreflight first in main, or name a program that does in Preflight.Command")
		}
		exe, err := self()
		if err != nil {
			return nil, fmt.Errorf("the preflight cannot find this process's executable (name one in Preflight.Command): %w", err)
		}
		command = []string{exe}
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("making the preflight's pipe: %w", err)
	}
	cmd := exec.Command(command[0], command[1:]...)
	if len(c.Command) == 0 {
		cmd.Args[0] = os.Args[0] // ps shows the server's name, not /proc/self/exe
	}
	cmd.Env = childEnv(c, backend)
	cmd.ExtraFiles = []*os.File{wr} // the child's descriptor 3
	cmd.WaitDelay = time.Second     // a grandchild holding its stderr must not hold the parent
	s := &started{rd: rd, args: cmd.Args, warm: backend == ""}
	var ordersRd *os.File
	if backend == "" {
		if ordersRd, s.orders, err = os.Pipe(); err != nil {
			rd.Close()
			wr.Close()
			return nil, fmt.Errorf("making the preflight's pipe: %w", err)
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, ordersRd) // the child's descriptor 4
	}
	closeChildsEnds := func() {
		wr.Close()
		if ordersRd != nil {
			ordersRd.Close()
		}
	}
	s.p, err = hangcheck.Start(cmd, hangcheck.Limits{
		Timeout: c.Deadline, Grace: grace, Reap: reap, MaxOutput: keepBytes,
		Started: closeChildsEnds,
		Armed:   ArmedLine, ArmBound: StartBound(c.Deadline),
	})
	if err != nil {
		closeChildsEnds()
		rd.Close()
		if s.orders != nil {
			s.orders.Close()
		}
		return nil, err
	}
	return s, nil
}

// childEnv is the environment of c's child for backend: this process's, with
// c's additions. The child's work is one goroutine's: a Go runtime with one
// P starts faster, and more so on a host of many cores.
func childEnv(c Child, backend string) []string {
	return append(append(os.Environ(), c.Env...), EnvChild+"="+backend, "GOMAXPROCS=1")
}

// finish waits for s's report, or judges why it gave none, as Run
// describes. It closes s's pipes.
func (s *started) finish(ctx context.Context, c Child) (Report, error) {
	defer s.rd.Close()
	if s.orders != nil {
		defer s.orders.Close()
	}
	rd := s.rd
	// Read the report as it comes: once it is complete the child has
	// nothing left to say, and is not waited for past reportExit.
	type decoded struct {
		rep Report
		err error
	}
	got := make(chan decoded, 1)
	reported := make(chan struct{})
	go func() { // ends at EOF, or when rd is closed on return
		rep, err := readReport(rd, maxReport)
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
	res, runErr := s.p.Wait(runCtx)
	// The armed line is the parent's marker, not the child's words.
	res.Stderr = strings.Replace(res.Stderr, ArmedLine+"\n", "", 1)
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
		switch {
		case d.rep.Backend == c.Backend:
		case s.warm && d.rep.Backend == "":
			return Report{}, errOlderChild
		default:
			return Report{}, fmt.Errorf("the preflight child %s reported on backend %q, not %q: it does not serve this preflight",
				strings.Join(s.args, " "), d.rep.Backend, c.Backend)
		}
		if d.rep.Error != nil {
			return d.rep, d.rep.Error.Rebuild()
		}
		return d.rep, nil
	}
	if runErr != nil && ctx.Err() == nil && !errors.Is(runErr, context.Canceled) {
		return Report{}, runErr
	}
	if ctx.Err() != nil {
		return Report{}, ctx.Err()
	}
	na := &NoAnswer{Backend: c.Backend, Command: strings.Join(s.args, " "), Attempt: c.Attempt, Took: res.Duration,
		Hung: res.Verdict == hangcheck.Hang, Unkillable: res.Unreaped, ExitCode: res.ExitCode, Stderr: res.Stderr}
	if !na.Hung {
		d := parseDeath(res.Stderr)
		na.Report, na.Panicked, na.Frame, na.Call = d.Report, d.Panicked, d.Frame, d.Call
	}
	switch m := fatalSignal().FindStringSubmatch(res.Stderr); {
	case res.Signal != 0:
		// Under GOTRACEBACK=crash a Go panic ends so too (SIGABRT):
		// Panicked still says what it was.
		na.Signal = signalName(res.Signal)
	case m != nil && !na.Hung && !na.Panicked:
		// A Go panic's "[signal SIGSEGV ...]" is a fault in Go code, which
		// panicked: not the driver's signal.
		na.Signal = m[1] + m[2]
	}
	if na.Hung {
		na.Stacks = hangcheck.Goroutines(res.Stderr, 12, "gpuinit/")
		if m := cgoCall().FindStringSubmatch(res.Stderr); m != nil {
			na.Call = m[1]
		}
	}
	na.NoReport = !na.Hung && na.Signal == "" && res.ExitCode == 0
	return Report{}, na
}

var (
	// cgoCall finds the C function a goroutine dump shows a call into, as cgo
	// names it: _Cfunc_gpuinit_cuInit is the shim's wrapper of cuInit.
	cgoCall = lazyRegexp(`_Cfunc_(?:gpuinit_)?(\w+)`)
	// fatalSignal finds the signal a Go child reports when it crashed:
	// "SIGSEGV: segmentation violation" for a fault in C code, "[signal
	// SIGSEGV: ...]" for one in Go.
	fatalSignal = lazyRegexp(`(?m)^(SIG[A-Z]+): |\[signal (SIG[A-Z]+)`)
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

// LastLines returns the last n non-empty lines of s, joined by " | ".
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	var keep []string
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append([]string{l}, keep...)
		}
	}
	return strings.Join(keep, " | ")
}
