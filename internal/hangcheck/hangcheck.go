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
	Duration time.Duration // from start to exit
	ExitCode int           // -1 if killed by a signal
	Stdout   string
	Stderr   string // for a Go child that hung: its goroutine dump
}

// Grace is how long a child has to write its goroutine dump after SIGQUIT before
// it is killed.
const Grace = 5 * time.Second

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
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Pdeathsig fires when the thread that started the child exits, not the
	// process (golang/go#27505): keep this goroutine on its thread until the
	// child has been waited for.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dieWithParent(cmd)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("hangcheck: starting %s: %w", cmd.Path, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	hung := false
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-timer.C:
		hung = true
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case waitErr = <-exited:
		case <-time.After(Grace):
			_ = cmd.Process.Kill()
			waitErr = <-exited
		}
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-exited
		return Result{}, ctx.Err()
	}
	r := Result{
		Duration: time.Since(start),
		ExitCode: cmd.ProcessState.ExitCode(),
		Stdout:   stdout.String(),
		Stderr:   stderr.String(),
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
