//go:build linux

package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/hangcheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInterruptionIsReportedAsSuchWithTheShellsStatus(t *testing.T) {
	t.Parallel() // its children mostly wait: overlap them with the others'
	bin := buildProbe(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "-backend", "sim", "-json", "-timeout", "60s")
			cmd.Env = append(os.Environ(), "GPUINIT_SIM_FAIL=hang")
			var stdout bytes.Buffer
			var stderr lockedBuffer // read while the child writes it
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "initializing sim") },
				10*time.Second, 10*time.Millisecond)
			require.NoError(t, cmd.Process.Signal(tc.sig))
			err := cmd.Wait()
			var exitErr *exec.ExitError
			require.ErrorAs(t, err, &exitErr, "stdout:\n%s", stdout.String())
			assert.Equal(t, tc.code, exitErr.ExitCode())
			rep := decode(t, probeResult{stdout: stdout.String(), code: exitErr.ExitCode()})
			require.NotNil(t, rep.Error)
			assert.Equal(t, "interrupted", rep.Error.Kind, "not UNAVAILABLE: an interruption is not a missing GPU")
			assert.Equal(t, tc.sig.String(), rep.Interrupted)
		})
	}
}

// TestHungChildrenDieWithTheirParent kills gpuprobe with SIGKILL, which it
// cannot catch, while its children hang (the legacy discipline): the kernel
// must take them down too (Pdeathsig), or they would run for ever.
func TestHungChildrenDieWithTheirParent(t *testing.T) {
	t.Parallel() // its children mostly wait: overlap them with the others'
	bin := buildProbe(t)
	cmd := exec.Command(bin, "-backend", "sim", "-discipline", "legacy", "-timeout", "120s")
	require.NoError(t, cmd.Start())
	var kids []int
	require.Eventually(t, func() bool {
		kids = childtest.Children(cmd.Process.Pid)
		return len(kids) >= 2
	}, 20*time.Second, 20*time.Millisecond, "the scenario children start")
	// No wait for them to reach the hang: under the legacy discipline every
	// scenario hangs until its 120 s timeout, so a child seen alive here is
	// one that only Pdeathsig can end within the 10 s below.
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	assert.Eventually(t, func() bool {
		for _, k := range kids {
			if childtest.Alive(k) {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "children %v outlived their parent", kids)
}

// TestTinyTimeoutsExplainAMissingDump: a child cut off before it could print
// its goroutines gets a dump that says so, never an empty one. judge is
// checked on both kinds of hang directly, since which one a 2 ms timeout
// gives depends on the machine; the run then shows every scenario's dump is
// one or the other. The run is of the scenarios alone, in children of this
// test binary (TestMain serves them, as main does): a whole gpuprobe run
// under -timeout 2ms also has its own init to finish within 2 ms, which a
// loaded machine does not, and then runs no scenario at all.
func TestTinyTimeoutsExplainAMissingDump(t *testing.T) {
	t.Parallel() // its children mostly wait: overlap them with the others'
	sc := scenario{name: "queued/ctx"}
	for _, tc := range []struct {
		name, stderr, want string
	}{
		{"killed before its runtime started", "", "no dump: the child had not started"},
		{"a goroutine dump", "goroutine 1 [sync.Mutex.Lock]:\ngithub.com/gpuinit/gpuinit/internal/legacy.(*Initializer).Init(...)\n\t/x/legacy.go:1 +0x1",
			"internal/legacy.(*Initializer).Init"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := judge(sc, hangcheck.Result{Verdict: hangcheck.Hang, Stderr: tc.stderr}, nil, 2*time.Millisecond)
			assert.Equal(t, string(hangcheck.Hang), res.Verdict)
			assert.Contains(t, res.Dump, tc.want)
		})
	}

	queued, err := selectScenarios("queued")
	require.NoError(t, err)
	results := runScenarios(context.Background(), config{timeout: 2 * time.Millisecond, discipline: "legacy"}, "sim", queued, io.Discard)
	require.Len(t, results, len(queued))
	for _, s := range results {
		assert.Equal(t, "hang", s.Verdict, s.Name)
		if !strings.Contains(s.Dump, "goroutine ") {
			assert.Contains(t, s.Dump, "no dump: the child had not started", s.Name)
		}
	}
}

// lockedBuffer is a bytes.Buffer that one goroutine may write while another
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
