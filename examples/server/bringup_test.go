//go:build linux && cgo

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBringUpOverTheFakeDriver runs the server over the fake libcuda and the
// fake libamdhip64 in each way a driver's init goes wrong, with the preflight
// on as the server has it by default, and checks what its three health paths
// answer, what the status says, how often the server's own process called
// the driver's init (from the fake's call log, which names each caller's
// pid), and that no child is left.
func TestBringUpOverTheFakeDriver(t *testing.T) {
	t.Parallel() // beside the package's other servers, mostly waiting too
	for _, vendor := range []struct {
		backend, init string // -backend, and the fake's init call
		fake          string // the prefix of the fake's variables
		env           func(t *testing.T, log fakedriver.CallLog) []string
		notReady      []string // an init that is not ready yet twice, then is
	}{
		{"cuda", "cuInit", "GPUINIT_FAKE_CUDA", func(t *testing.T, log fakedriver.CallLog) []string {
			return []string{"GPUINIT_CUDA_LIBRARY=" + fakedriver.Build(t, fakedriver.CUDA),
				"GPUINIT_CURAND_LIBRARY=" + fakedriver.NotInstalled("libcurand.so.10"), "GPUINIT_FAKE_CUDA_LOG=" + string(log)}
		}, []string{"GPUINIT_FAKE_CUDA_INIT=802", "GPUINIT_FAKE_CUDA_INIT_FAIL_TIMES=2"}},
		// hipInit's 100 is not-yet only where /dev/kfd exists: the
		// driver has not found the GPU yet.
		{"hip", "hipInit", "GPUINIT_FAKE_HIP", func(t *testing.T, log fakedriver.CallLog) []string {
			dev := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dev, "kfd"), nil, 0o644))
			return []string{"GPUINIT_HIP_LIBRARY=" + fakedriver.Build(t, fakedriver.HIP), "GPUINIT_DEV_ROOT=" + dev,
				"GPUINIT_SYSFS_ROOT=" + t.TempDir(), "GPUINIT_FAKE_HIP_LOG=" + string(log)}
		}, []string{"GPUINIT_FAKE_HIP_INIT=100", "GPUINIT_FAKE_HIP_INIT_FAIL_TIMES=2"}},
	} {
		t.Run(vendor.backend, func(t *testing.T) {
			t.Parallel() // two servers over their own fakes, mostly waiting on deadlines
			bringUpOverTheFake(t, vendor.backend, vendor.init, vendor.fake, vendor.env, vendor.notReady)
		})
	}
}

func bringUpOverTheFake(t *testing.T, backend, initCall, fake string, vendorEnv func(*testing.T, fakedriver.CallLog) []string, notReady []string) {
	for _, tc := range []struct {
		name  string
		env   []string
		state string // where the runtime ends up, or stays
		class string // the failure's class, or the last attempt's
		kind  string // the last attempt's error kind
		// init calls in the server's process and in its children
		inServer, minInChildren int
		ready, live             bool
		message                 string // in the last attempt's error, with the init call for %s
	}{
		{name: "an init that hangs for ever", env: []string{fake + "_INIT_HANG=1"}, state: "initializing",
			class: "not-yet", kind: "hang", inServer: 0, minInChildren: 2, ready: false, live: true},
		{name: "an init that crashes", env: []string{fake + "_INIT_CRASH=1"}, state: "initializing",
			class: "not-yet", inServer: 0, minInChildren: 2, ready: false, live: true,
			message: "crashed with SIGSEGV, in %s: SIGSEGV: segmentation violation"},
		{name: "not ready twice, across processes, then ready", env: notReady,
			state: "ready", class: "not-yet", inServer: 1, minInChildren: 3, ready: true, live: true},
		{name: "an init slow by 200 ms", env: []string{fake + "_INIT_DELAY_MS=200"}, state: "ready",
			inServer: 1, minInChildren: 1, ready: true, live: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a server of its own, mostly waiting on its deadlines
			log := fakedriver.NewCallLog(t)
			env := append(append(vendorEnv(t, log), "GPUINIT_FAKE_LOG_PID=1",
				fake+"_INIT_FAIL_FILE="+filepath.Join(t.TempDir(), "inits")), tc.env...)
			// Retries wait 20 ms, not 1 s: the cases are about what each
			// child did, not how long the server waits between them.
			url, cmd := startServer(t, env, "-backend", backend, "-preflight", "400ms", "-preflight-backoff", "20ms",
				"-init-deadline", "100ms")
			get(t, url+health.ReadyPath) // starts init
			var st health.Status
			if tc.state == "ready" {
				st = waitForState(t, url, "ready")
			} else {
				// Two attempts over, each stopped at its deadline, and
				// liveness stays 200 past the init deadline all along. The
				// wait after the second child, or a third child (one runs
				// at a time), is the state that says both children ran
				// their init: a count of two attempts alone runs ahead of
				// the second child's call.
				require.Eventually(t, func() bool {
					st = status(t, url)
					return st.BringUp != nil && (st.BringUp.Attempts >= 2 && st.BringUp.Phase == "waiting" || st.BringUp.Attempts >= 3)
				}, 30*time.Second, 5*time.Millisecond)
				assert.LessOrEqual(t, len(childtest.Children(cmd.Process.Pid)), 1, "one child at a time")
			}
			assert.Equal(t, tc.state, st.State)
			for path, want := range map[string]bool{health.ReadyPath: tc.ready, health.LivePath: tc.live} {
				code, body := get(t, url+path)
				assert.Equal(t, map[bool]int{true: http.StatusOK, false: http.StatusServiceUnavailable}[want], code, "%s: %s", path, body)
			}
			require.NotNil(t, st.BringUp)
			assert.True(t, st.BringUp.Preflight)
			if tc.class != "" {
				assert.Equal(t, tc.class, st.BringUp.LastClass)
				require.NotNil(t, st.BringUp.LastError)
				if tc.kind != "" {
					assert.Equal(t, tc.kind, st.BringUp.LastError.Kind)
				}
				if tc.message != "" {
					assert.Contains(t, st.BringUp.LastError.Message, fmt.Sprintf(tc.message, initCall))
					assert.NotRegexp(t, absoluteGoPath, st.BringUp.LastError.Message, "no build machine's path")
				}
			}
			if tc.state == "initializing" {
				assert.Nil(t, st.BringUp.InProcess, "nothing of the driver ran in the server's process")
			}

			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				t.Fatal("SIGTERM did not stop the server")
			}
			inServer, inChildren := 0, 0
			for _, line := range log.Lines(t, initCall) {
				if strings.HasSuffix(line, " pid="+strconv.Itoa(cmd.Process.Pid)) {
					inServer++
				} else {
					inChildren++
				}
			}
			assert.Equal(t, tc.inServer, inServer, "%s in the server's own process: only after a child succeeded", initCall)
			assert.GreaterOrEqual(t, inChildren, tc.minInChildren)
			for _, pid := range childPids(t, log, cmd.Process.Pid) {
				assert.Eventually(t, func() bool { return !childtest.Alive(pid) }, 10*time.Second, 20*time.Millisecond,
					"preflight child %d outlived the server", pid)
			}
		})
	}
}

// absoluteGoPath finds a Go file named by an absolute path, as the build
// machine's are in a goroutine's stack.
var absoluteGoPath = regexp.MustCompile(`(^|[\s(])/[^\s]*\.go\b`)

// TestAGoPanicInThePreflightChildNeedsAnOperator: the driver's init panics
// in Go in the preflight child (the sim backend's, as GPUINIT_SIM_FAIL=panic
// makes it). The status names the panic by its line and the frame that
// panicked, with no path of the build machine's, and the class is
// needs-operator, as device's package doc lists the classes: no retry,
// readiness 503, liveness 200.
func TestAGoPanicInThePreflightChildNeedsAnOperator(t *testing.T) {
	t.Parallel() // a server of its own, mostly waiting
	url, _ := startServer(t, []string{"GPUINIT_SIM_FAIL=panic"}, "-backend", "sim", "-preflight", "10s")
	get(t, url+health.ReadyPath) // starts init
	st := waitForState(t, url, "failed")
	assert.Equal(t, "needs-operator", st.Class)
	require.NotNil(t, st.Failure)
	assert.Regexp(t, `preflight child 1 \(.*\) panicked in sim\.\(\*Backend\)\.Init at github\.com/gpuinit/gpuinit/device/sim/sim\.go:\d+: `+
		`panic: sim: simulated driver panic in Init$`, st.Failure.Message)
	assert.NotRegexp(t, absoluteGoPath, st.Failure.Message, "no build machine's path")
	require.NotNil(t, st.BringUp)
	assert.Equal(t, 1, st.BringUp.Attempts, "not retried: a fresh child panics again")
	for path, want := range map[string]int{health.ReadyPath: http.StatusServiceUnavailable, health.LivePath: http.StatusOK} {
		code, body := get(t, url+path)
		assert.Equal(t, want, code, "%s: %s", path, body)
	}
}

// status reads the server's status.
func status(t *testing.T, url string) health.Status {
	t.Helper()
	var st health.Status
	_, body := get(t, url+health.StatusPath)
	require.NoError(t, json.Unmarshal([]byte(body), &st), body)
	return st
}

// childPids are the pids, other than the server's, that called into the fake.
func childPids(t *testing.T, log fakedriver.CallLog, server int) []int {
	t.Helper()
	seen := map[int]bool{}
	for _, line := range log.Lines(t) {
		if i := strings.LastIndex(line, " pid="); i >= 0 {
			if pid, err := strconv.Atoi(line[i+len(" pid="):]); err == nil && pid != server {
				seen[pid] = true
			}
		}
	}
	var pids []int
	for pid := range seen {
		pids = append(pids, pid)
	}
	return pids
}
