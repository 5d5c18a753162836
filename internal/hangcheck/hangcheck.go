// Package hangcheck runs a child process under a timeout and turns a hang into a
// verdict with evidence: on expiry it sends SIGQUIT, so that a Go child prints
// every goroutine's stack, then kills the child if it is still there. It is how
// the tests and gpuprobe prove that something does not hang, and that they would
// see it if it did.
package hangcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Verdict is how a child process ended.
type Verdict string

// The verdicts.
const (
	OK    Verdict = "ok"    // exited with status 0 in time
	Hang  Verdict = "hang"  // still running at the timeout
	Error Verdict = "error" // exited non-zero, or was killed by something else
)

// Result is what happened to one child.
type Result struct {
	Verdict  Verdict
	Duration time.Duration  // from the start (RunWith) or the Wait to the exit
	ExitCode int            // -1 if killed by a signal, or not reaped
	Signal   syscall.Signal // the signal that killed it, or 0
	Stdout   string
	Stderr   string // for a Go child that hung: its goroutine dump
	// Unreaped reports a child that was still there after SIGKILL and
	// Limits.Reap: stuck in the kernel (uninterruptible sleep in a driver).
	// It is left to a goroutine that reaps it whenever the kernel lets it go,
	// so that it never stays a zombie; nothing waits for that goroutine.
	Unreaped bool
}

// Grace is how long a child has to write its goroutine dump after SIGQUIT before
// it is killed.
const Grace = 5 * time.Second

// Limits bound one child for RunWith.
type Limits struct {
	Timeout time.Duration // how long it may run before SIGQUIT
	Grace   time.Duration // after SIGQUIT, before SIGKILL; 0 is Grace
	// Reap bounds the wait for the child after SIGKILL; 0 waits as long as
	// it takes. A child still there then is Result.Unreaped.
	Reap time.Duration
	// MaxOutput keeps only the last MaxOutput bytes of each of stdout and
	// stderr; 0 keeps all.
	MaxOutput int
	// Started, if set, is called once the child has started, before any
	// wait: to close the parent's copy of a pipe the child writes.
	Started func()
	// Armed, if set, is a line the child writes to its stderr once it is
	// where Timeout should start: past its process start, which a loaded
	// machine can stretch by seconds. Timeout then counts from that line.
	// A child that never writes it is judged as if it hung at ArmBound.
	Armed string
	// ArmBound bounds the wait for Armed; 0 is DefaultArmBound.
	ArmBound time.Duration
}

// DefaultArmBound is how long a child may take to write Limits.Armed.
const DefaultArmBound = time.Minute

// Run starts cmd, which must not have been started and whose Stdout and Stderr
// must be unset, and waits for it to exit or for timeout to pass. On timeout it
// sends SIGQUIT, waits up to Grace, then kills the child; the verdict is Hang
// whatever the child did after SIGQUIT.
//
// Run returns an error if the child could not be started, if ctx ends first
// (the child is then killed and the error is ctx's), or if waiting for the
// child failed other than by its exit status. It always waits for the child, so
// no process or goroutine is left. On Linux the child also dies with the
// parent: it gets SIGKILL if the parent dies, even by SIGKILL (Pdeathsig), so a
// hung child is never left behind.
func Run(ctx context.Context, cmd *exec.Cmd, timeout time.Duration) (Result, error) {
	return RunWith(ctx, cmd, Limits{Timeout: timeout})
}

// RunWith is Run under limits. With Limits.Reap set it never waits longer
// than Timeout + Grace + Reap (Grace + Reap after ctx ends), whatever the
// child does: a child that SIGKILL cannot end within Reap is reported as
// Unreaped, and ctx's end as ctx's error either way.
func RunWith(ctx context.Context, cmd *exec.Cmd, limits Limits) (Result, error) {
	from := time.Now()
	p, err := Start(cmd, limits)
	if err != nil {
		return Result{}, err
	}
	p.from = from // its limits and Duration count from the start, the exec's included
	return p.Wait(ctx)
}

// Process is a child that Start started, for Wait to judge.
type Process struct {
	cmd            *exec.Cmd
	limits         Limits
	stdout, stderr *tail
	armed          chan struct{} // closes at the Armed line; nil without one
	exited         chan error    // the child's exit, from its reaper
	done           chan struct{} // closed once the child has exited and been reaped
	from           time.Time     // when Wait's clock starts; zero: when Wait is called
}

// Start starts cmd as RunWith does, and returns at once: Wait judges it
// later, and its limits and Duration count from Wait. Between the two the child runs
// unwatched, as a pre-started child that waits for its orders does. Its
// output is kept meanwhile. A goroutine reaps the child whenever it exits;
// the child dies with the parent however long it runs. The caller must call
// Wait, or kill the child, or it runs until the parent exits.
func Start(cmd *exec.Cmd, limits Limits) (*Process, error) {
	if limits.Grace <= 0 {
		limits.Grace = Grace
	}
	p := &Process{cmd: cmd, limits: limits, exited: make(chan error, 1), done: make(chan struct{}),
		stdout: &tail{max: limits.MaxOutput}, stderr: &tail{max: limits.MaxOutput}}
	if limits.Armed != "" {
		p.armed = make(chan struct{})
		p.stderr.watchFor(limits.Armed, p.armed)
	}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	started := make(chan error, 1)
	go func() { // the reaper: ends when the child does
		// Pdeathsig fires when the thread that started the child exits, not
		// the process (golang/go#27505): this goroutine keeps its thread
		// until the child has been waited for.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		dieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			started <- fmt.Errorf("hangcheck: starting %s: %w", cmd.Path, err)
			return
		}
		started <- nil
		p.exited <- cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	if limits.Started != nil {
		limits.Started()
	}
	return p, nil
}

// Exited reports whether the child has exited, without waiting.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop kills the child, unjudged, and waits for its exit until ctx ends. It
// returns ctx's error if the child outlived ctx (stuck in the kernel); its
// reaper then waits for it alone. Call it instead of Wait, once.
func (p *Process) Stop(ctx context.Context) error {
	_ = p.cmd.Process.Kill()
	select {
	case <-p.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Wait waits for the child to exit, or for its limits to pass, counted from
// now, and judges it as RunWith does. Call it once.
func (p *Process) Wait(ctx context.Context) (Result, error) {
	limits, cmd, stdout, stderr, armed := p.limits, p.cmd, p.stdout, p.stderr, p.armed
	// With an Armed line the first wait is for it; without, Timeout runs
	// from now.
	first := limits.Timeout
	if armed != nil {
		first = limits.ArmBound
		if first <= 0 {
			first = DefaultArmBound
		}
	}
	start := p.from
	if start.IsZero() {
		start = time.Now()
	}
	// killed sends SIGKILL and waits up to Reap for the exit.
	killed := func() (error, bool) {
		_ = cmd.Process.Kill()
		if limits.Reap <= 0 {
			return <-p.exited, true
		}
		reap := time.NewTimer(limits.Reap)
		defer reap.Stop()
		select {
		case err := <-p.exited:
			return err, true
		case <-reap.C:
			return nil, false
		}
	}
	timer := time.NewTimer(first - time.Since(start))
	defer timer.Stop()
	hung, reaped := false, true
	var waitErr error
	for done := false; !done; {
		select {
		case <-armed: // Timeout counts from here; a nil channel never fires again
			timer.Reset(limits.Timeout)
			armed = nil
		case waitErr = <-p.exited:
			done = true
		case <-timer.C: // Timeout, or ArmBound with the child not armed yet
			hung, done = true, true
			_ = cmd.Process.Signal(syscall.SIGQUIT)
			grace := time.NewTimer(limits.Grace)
			select {
			case waitErr = <-p.exited:
			case <-grace.C:
				waitErr, reaped = killed()
			}
			grace.Stop()
		case <-ctx.Done():
			_, reaped = killed()
			return Result{Duration: time.Since(start), ExitCode: -1, Unreaped: !reaped,
				Stdout: stdout.String(), Stderr: stderr.String()}, ctx.Err()
		}
	}
	r := Result{Duration: time.Since(start), ExitCode: -1, Stdout: stdout.String(), Stderr: stderr.String(), Unreaped: !reaped}
	if reaped {
		r.ExitCode = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Signal = ws.Signal()
		}
	}
	var exitErr *exec.ExitError
	switch {
	case hung:
		r.Verdict = Hang
	case waitErr == nil:
		r.Verdict = OK
	case errors.As(waitErr, &exitErr):
		r.Verdict = Error
	default:
		return r, fmt.Errorf("hangcheck: waiting for %s: %w", cmd.Path, waitErr)
	}
	return r, nil
}

// tail keeps what is written to it, or with max set only the last max
// bytes; it is safe for the child's two pipes' copying goroutines and a
// reader.
type tail struct {
	mu      sync.Mutex // protects following fields
	buf     bytes.Buffer
	max     int
	dropped bool

	marker []byte        // watchFor's line; nil once seen
	seen   chan struct{} // closed once marker was written
	line   []byte        // the line being written, until its newline
}

// watchFor closes seen once a line holding marker has been written.
func (t *tail) watchFor(marker string, seen chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.marker, t.seen = []byte(marker), seen
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.marker != nil {
		t.line = append(t.line, p...)
		if bytes.Contains(t.line, t.marker) {
			close(t.seen)
			t.marker, t.line = nil, nil
		} else if i := bytes.LastIndexByte(t.line, '\n'); i >= 0 {
			t.line = append(t.line[:0], t.line[i+1:]...)
		}
	}
	n := len(p)
	if t.max > 0 && len(p) > t.max {
		p, t.dropped = p[len(p)-t.max:], true
	}
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; t.max > 0 && over > 0 {
		t.buf.Next(over)
		t.dropped = true
	}
	return n, nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dropped {
		return "[...]" + t.buf.String()
	}
	return t.buf.String()
}

// Goroutines returns the goroutines of a Go goroutine dump whose stacks mention any
// of the given substrings (a package path, a function name), each trimmed to
// its header and its first maxFrames frames outside the runtime's internals
// (runtime.*, internal/*): the part of a dump that shows where a hang is, from
// the lock down. With no substrings it keeps every goroutine.
func Goroutines(dump string, maxFrames int, mention ...string) string {
	var out strings.Builder
	for _, g := range strings.Split(dump, "\n\n") {
		if !strings.HasPrefix(g, "goroutine ") {
			continue
		}
		keep := len(mention) == 0
		for _, m := range mention {
			keep = keep || strings.Contains(g, m)
		}
		if !keep {
			continue
		}
		all := strings.Split(strings.TrimRight(g, "\n"), "\n")
		lines := []string{all[0]}
		// A frame is two lines, the function then its file and line, and so
		// is "created by"; a note such as "...additional frames elided..." is
		// one line.
		kept, dropped := 0, 0
		for i, size := 1, 0; i < len(all); i += size {
			size = 2
			if strings.HasPrefix(all[i], "...") {
				size = 1
			}
			frame := all[i:min(i+size, len(all))]
			if strings.HasPrefix(frame[0], "runtime.") || strings.HasPrefix(frame[0], "internal/") {
				continue
			}
			if maxFrames > 0 && kept == maxFrames {
				dropped++
				continue
			}
			lines = append(lines, frame...)
			kept++
		}
		if dropped > 0 {
			lines = append(lines, fmt.Sprintf("\t... %d more frames", dropped))
		}
		out.WriteString(strings.Join(lines, "\n"))
		out.WriteString("\n\n")
	}
	return strings.TrimRight(out.String(), "\n")
}
