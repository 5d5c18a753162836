package hangcheck

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGoroutinesKeepsWholeFramesAroundAnElisionNote(t *testing.T) {
	dump := "goroutine 7 [sync.Mutex.Lock]:\n" +
		"runtime.gopark(0x0?)\n\t/go/src/runtime/proc.go:435 +0xce\n" +
		"github.com/gpuinit/gpuinit/lazy.(*Initializer).lock(...)\n\t/src/lazy/lazy.go:300\n" +
		"...additional frames elided...\n" +
		"runtime.goexit({})\n\t/go/src/runtime/asm_amd64.s:1700 +0x1\n" +
		"created by main.main in goroutine 1\n\t/src/main.go:12 +0x25\n" +
		"\n" +
		"goroutine 8 [select]:\n" +
		"net/http.(*conn).serve(0x0)\n\t/go/src/net/http/server.go:2100\n"
	want := "goroutine 7 [sync.Mutex.Lock]:\n" +
		"github.com/gpuinit/gpuinit/lazy.(*Initializer).lock(...)\n\t/src/lazy/lazy.go:300\n" +
		"...additional frames elided...\n" +
		"created by main.main in goroutine 1\n\t/src/main.go:12 +0x25"
	assert.Equal(t, want, Goroutines(dump, 10, "gpuinit/"), "the runtime frame after the note is dropped whole")
}

func TestRunWithKeepsTheTailOfTheOutput(t *testing.T) {
	t.Parallel() // children that mostly sleep
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done")
	r, err := RunWith(context.Background(), cmd, Limits{Timeout: 10 * time.Second, MaxOutput: 100})
	require.NoError(t, err)
	assert.Equal(t, OK, r.Verdict)
	assert.LessOrEqual(t, len(r.Stdout), 100+len("[...]"))
	assert.True(t, strings.HasPrefix(r.Stdout, "[...]"), "says it dropped the head")
	assert.True(t, strings.HasSuffix(r.Stdout, "line1999\n"), "keeps the tail")
}

func TestRunWithNamesTheSignalThatEndedTheChild(t *testing.T) {
	t.Parallel() // children that mostly sleep
	r, err := RunWith(context.Background(), exec.Command("sh", "-c", "kill -SEGV $$"), Limits{Timeout: 10 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, Error, r.Verdict)
	assert.Equal(t, syscall.SIGSEGV, r.Signal)
	assert.Equal(t, -1, r.ExitCode)
}

// TestRunWithNeverWaitsPastItsReapBound stands in for a child that SIGKILL
// cannot end (stuck in a kernel driver): a grandchild keeps the child's
// stdout open, so that waiting for the child never finishes. RunWith must
// give up on it after Reap, report it Unreaped, and return.
func TestRunWithNeverWaitsPastItsReapBound(t *testing.T) {
	t.Parallel() // children that mostly sleep
	pids := filepath.Join(t.TempDir(), "pids")
	// Both sleeps' pids go to a file, so that the cleanup ends these two
	// processes and no one else's.
	cmd := exec.Command("sh", "-c", "sleep 30 & echo $! >"+pids+"; echo $$ >>"+pids+"; echo started; exec sleep 30")
	t.Cleanup(func() {
		b, _ := os.ReadFile(pids)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	var started bool
	start := time.Now()
	r, err := RunWith(context.Background(), cmd, Limits{Timeout: 100 * time.Millisecond, Grace: 50 * time.Millisecond,
		Reap: 150 * time.Millisecond, Started: func() { started = true }})
	took := time.Since(start)
	require.NoError(t, err)
	assert.True(t, started, "Started ran")
	assert.Equal(t, Hang, r.Verdict)
	assert.True(t, r.Unreaped, "the wait was abandoned, not finished")
	assert.Less(t, took, 5*time.Second, "Timeout + Grace + Reap, not the 30 s the grandchild holds the pipe")
}

// TestAnArmedTimeoutCountsFromTheChildsLine: with Limits.Armed, the timeout
// counts from the line the child writes once it is where the timeout should
// start, so a start that a loaded machine stretches is not taken for a hang;
// a child that never writes it is hung at ArmBound.
func TestAnArmedTimeoutCountsFromTheChildsLine(t *testing.T) {
	t.Parallel() // children that mostly sleep
	for _, tc := range []struct {
		name    string
		script  string
		limits  Limits
		verdict Verdict
		atLeast time.Duration
	}{
		// Timed from its start, it would be killed at 150 ms, before its line.
		{"a child slow to arm is timed from its line", "sleep 0.25; echo go-armed >&2; exec sleep 60",
			Limits{Timeout: 100 * time.Millisecond, Grace: 50 * time.Millisecond, Armed: "go-armed"}, Hang, 350 * time.Millisecond},
		{"a line written in two pieces arms it", "sleep 0.25; printf go-ar >&2; printf 'med\\n' >&2; exec sleep 60",
			Limits{Timeout: 100 * time.Millisecond, Grace: 50 * time.Millisecond, Armed: "go-armed"}, Hang, 350 * time.Millisecond},
		{"a child that never arms is hung at ArmBound", "exec sleep 60",
			Limits{Timeout: time.Hour, Grace: 50 * time.Millisecond, Armed: "go-armed", ArmBound: 100 * time.Millisecond}, Hang, 100 * time.Millisecond},
		{"an armed child that exits is ok", "echo go-armed >&2; exit 0",
			Limits{Timeout: time.Hour, Armed: "go-armed"}, OK, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := RunWith(context.Background(), exec.Command("sh", "-c", tc.script), tc.limits)
			require.NoError(t, err)
			assert.Equal(t, tc.verdict, r.Verdict, "stderr: %s", r.Stderr)
			assert.GreaterOrEqual(t, r.Duration, tc.atLeast)
			assert.Less(t, r.Duration, 30*time.Second, "never the child's own 60 s")
		})
	}
}
