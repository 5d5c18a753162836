//go:build linux && cgo && !nocuda && !cudalink

package cuda

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPreflightOverTheFakeDriver runs each way a driver's init goes wrong in
// a preflight child of a child test, and counts, from the fake's call log
// with pids, which processes called cuInit.
func TestPreflightOverTheFakeDriver(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fake's log
	for _, tc := range []struct {
		name string
		env  []string
		want string // what the child test checks
	}{
		{"an init that hangs for ever", []string{"GPUINIT_FAKE_CUDA_INIT_HANG=1"}, "hang"},
		{"an init that crashes", []string{"GPUINIT_FAKE_CUDA_INIT_CRASH=1"}, "crash"},
		{"802 for the first two inits of any process, then a device", []string{"GPUINIT_FAKE_CUDA_INIT=802",
			"GPUINIT_FAKE_CUDA_INIT_FAIL_TIMES=2", "GPUINIT_FAKE_CUDA_INIT_FAIL_FILE=" + filepath.Join(t.TempDir(), "inits")}, "recovers"},
		{"an init slow by 200 ms", []string{"GPUINIT_FAKE_CUDA_INIT_DELAY_MS=200"}, "slow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // its child mostly waits, on the deadline or the fake's delay
			env, log := fake(t, fakedriver.CUDA, append(tc.env, "GPUINIT_FAKE_LOG_PID=1", "WANT="+tc.want)...)
			out := runChild(t, "TestChildPreflight", env...)
			parent := childPid(t, out)
			var inParent, inChildren int
			for _, line := range log.Lines(t, "cuInit") {
				if strings.HasSuffix(line, " pid="+parent) {
					inParent++
				} else {
					inChildren++
				}
			}
			switch tc.want {
			case "hang", "crash":
				assert.Zero(t, inParent, "the server process never called cuInit")
				assert.Equal(t, 1, inChildren)
			case "recovers":
				assert.Equal(t, 1, inParent, "the server process called cuInit once, after a child succeeded")
				assert.Equal(t, 3, inChildren, "two children saw 802, the third a device")
			case "slow":
				assert.Equal(t, 1, inParent)
				assert.Equal(t, 1, inChildren)
			}
		})
	}
}

func TestChildPreflight(t *testing.T) {
	child(t)
	t.Logf("pid=%d", os.Getpid())
	r := device.New(process)
	p := device.Preflight{Deadline: time.Second, RetryFor: -1, Command: []string{os.Args[0], "-test.run=^$"}}
	if os.Getenv("WANT") == "recovers" {
		p.RetryFor, p.Backoff = 30*time.Second, 20*time.Millisecond
	}
	require.NoError(t, r.UsePreflight(p))
	err := r.Init(context.Background())
	var pe *device.PreflightError
	switch os.Getenv("WANT") {
	case "hang":
		require.ErrorIs(t, err, driver.ErrInitHung)
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "cuInit", pe.Call, "the stacks name the driver call")
		assert.Contains(t, pe.Stacks, "_Cfunc_gpuinit_cuInit")
		assert.Contains(t, err.Error(), "in cuInit")
		assert.Equal(t, device.ClassNotYet, device.ClassOf(err))
	case "crash":
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "SIGSEGV", pe.Signal)
		assert.Contains(t, pe.Stderr, "signal arrived during cgo execution", "the tail of its stderr")
		assert.Equal(t, device.ClassNotYet, device.ClassOf(err))
		assert.False(t, errors.Is(err, driver.ErrInitHung))
	case "recovers":
		require.NoError(t, err)
		assert.Equal(t, 3, r.Stats().BringUp.Attempts)
		assert.ErrorIs(t, r.Stats().BringUp.LastErr, driver.ErrNotReady)
	case "slow":
		require.NoError(t, err)
		assert.Equal(t, 1, r.Stats().BringUp.Attempts)
	}
}

// childPid is the pid TestChildPreflight logged.
func childPid(t *testing.T, out string) string {
	t.Helper()
	i := strings.Index(out, "pid=")
	require.GreaterOrEqual(t, i, 0, out)
	pid := strings.Fields(out[i+len("pid="):])[0]
	_, err := strconv.Atoi(pid)
	require.NoError(t, err, out)
	return pid
}
