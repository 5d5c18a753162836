//go:build linux && cgo && !nohip

package hip

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This test binary serves the preflight for the hip backend, as a server
// that imports device/backends does: its preflight children are itself.
func TestMain(m *testing.M) {
	device.ServePreflight()
	childtest.Main(m) // removes the fake libraries, built once for every test
}

func TestPreflightOverTheFakeRuntime(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fake's log
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"a hipInit that hangs for ever", []string{"GPUINIT_FAKE_HIP_INIT_HANG=1"}, "hang"},
		{"a hipInit that crashes", []string{"GPUINIT_FAKE_HIP_INIT_CRASH=1"}, "crash"},
		{"no device for the first two inits, with /dev/kfd there, then two", []string{"GPUINIT_FAKE_HIP_INIT=100",
			"GPUINIT_FAKE_HIP_INIT_FAIL_TIMES=2", "GPUINIT_FAKE_HIP_INIT_FAIL_FILE=" + filepath.Join(t.TempDir(), "inits")}, "recovers"},
		{"a hipInit slow by 200 ms, within the deadline", []string{"GPUINIT_FAKE_HIP_INIT_DELAY_MS=200"}, "slow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // its child mostly waits, on the deadline or the fake's delay
			env, log := fakeHost(t, fakedriver.HIP, append(tc.env, "GPUINIT_FAKE_LOG_PID=1", "WANT="+tc.want)...)
			runChild(t, "TestChildPreflight", env...)
			inits := log.Lines(t, "hipInit")
			pids := map[string]int{}
			for _, line := range inits {
				pids[line[strings.LastIndex(line, "pid="):]]++
			}
			switch tc.want {
			case "hang", "crash":
				assert.Len(t, inits, 1, "one child, and no hipInit in the server process")
			case "recovers":
				assert.Len(t, inits, 4, "three children, then the server process once")
				assert.Len(t, pids, 4, "each in a process of its own")
			case "slow":
				assert.Len(t, inits, 2, "one child, then the server process once")
				assert.Len(t, pids, 2, "each in a process of its own")
			}
		})
	}
}

func TestChildPreflight(t *testing.T) {
	child(t)
	var g device.Registry // the registration's Present tells not-yet from no GPU here
	g.Register(Registration())
	r, err := g.Open("hip")
	require.NoError(t, err)
	p := device.Preflight{Deadline: time.Second, RetryFor: -1, Command: []string{os.Args[0], "-test.run=^$"}}
	if os.Getenv("WANT") == "recovers" {
		p.RetryFor, p.Backoff = 30*time.Second, 20*time.Millisecond
	}
	require.NoError(t, r.UsePreflight(p))
	err = r.Init(context.Background())
	var pe *device.PreflightError
	switch os.Getenv("WANT") {
	case "hang":
		require.ErrorIs(t, err, driver.ErrInitHung)
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "hipInit", pe.Call)
	case "crash":
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "SIGSEGV", pe.Signal)
	case "recovers":
		require.NoError(t, err, "hipInit's 100 with /dev/kfd present is not-yet, and retried")
		assert.Equal(t, 3, r.Stats().BringUp.Attempts)
		assert.Equal(t, device.ClassNotYet, r.Stats().BringUp.LastClass)
	case "slow":
		require.NoError(t, err, "slow is not hung: the child answered within its deadline")
		b := r.Stats().BringUp
		assert.Equal(t, 1, b.Attempts)
		assert.Nil(t, b.LastErr)
		assert.Equal(t, device.Phase(""), b.Phase)
	}
}
