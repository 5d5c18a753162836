//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { childtest.MainOrProgram(m, "server", main) }

// startServer builds and starts the example on a free port with env, and
// returns its base URL and the process.
func startServer(t testing.TB, env []string, args ...string) (string, *exec.Cmd) {
	t.Helper()
	url, cmd, _ := startServerLogged(t, env, args...)
	return url, cmd
}

// startServerLogged is startServer that also returns the server's log, as it
// comes.
func startServerLogged(t testing.TB, env []string, args ...string) (string, *exec.Cmd, *childtest.Log) {
	t.Helper()
	return startBinary(t, childtest.Program(t), env, args...)
}

// startBinary is startServerLogged for the server binary at bin.
func startBinary(t testing.TB, bin string, env []string, args ...string) (string, *exec.Cmd, *childtest.Log) {
	t.Helper()
	s := childtest.StartServer(t, bin, env, listening, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	return s.URL, s.Cmd, s.Log
}

// listening is the server's log line that says where it listens.
var listening = regexp.MustCompile(`msg=listening addr=(\S+)`)

func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAHangingInitWithoutThePreflightFailsLiveness: with the preflight off,
// the driver's init hangs in the server's own process, which is then wedged:
// liveness fails once the init deadline passes, and SIGTERM still ends it
// within its grace, the log naming the initialization it abandoned.
func TestAHangingInitWithoutThePreflightFailsLiveness(t *testing.T) {
	t.Parallel() // a server of its own, mostly waiting
	url, cmd, log := startServerLogged(t, []string{"GPUINIT_SIM_FAIL=hang"}, "-backend", "sim", "-init-deadline", "500ms", "-preflight", "0",
		"-log-level", "debug", "-shutdown-grace", "250ms")
	for range 5 {
		start := time.Now()
		code, body := get(t, url+health.ReadyPath)
		assert.Equal(t, http.StatusServiceUnavailable, code, body)
		assert.Less(t, time.Since(start), time.Second, "readiness answers while init hangs")
	}
	code, _ := get(t, url+health.LivePath)
	assert.Equal(t, http.StatusOK, code, "alive within the deadline")
	require.Eventually(t, func() bool { code, _ := get(t, url+health.LivePath); return code == http.StatusServiceUnavailable },
		10*time.Second, 20*time.Millisecond, "liveness fails once the init deadline passes")
	_, body := get(t, url+health.StatusPath)
	var st health.Status
	require.NoError(t, json.Unmarshal([]byte(body), &st), body)
	assert.Equal(t, "initializing", st.State)
	assert.Equal(t, "init", st.Init.Running, "the phase that hangs")
	assert.Greater(t, st.Init.RunningSeconds, 0.5)

	// A draw waits for the hung init: SIGTERM must end it too, not wait.
	drawDone := make(chan int, 1)
	go func() {
		resp, err := http.Get(url + "/v1/draw?n=4")
		if err != nil {
			drawDone <- -1
			return
		}
		resp.Body.Close()
		drawDone <- resp.StatusCode
	}()
	log.WaitFor(t, "draw waits for the GPU's initialization") // in the handler, waiting
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		assert.NoError(t, err, "a clean exit, though init still hangs")
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not stop the server within its 250 ms grace")
	}
	assert.Equal(t, http.StatusServiceUnavailable, <-drawDone, "the waiting draw was answered, not cut off")
	log.WaitFor(t, "abandoning the initialization, in the sim driver's init") // the runtime's shutdown says what it left
}

// TestOnAHostWithoutAGPUTheServerStaysLiveAndServesOnTheCPU: the real
// backends find no driver library, or a runtime with no device behind it, in
// a preflight child; the failure is no-gpu, so liveness stays 200 past the
// init deadline, readiness is 200 with the server degraded, and draws come
// from the CPU.
func TestOnAHostWithoutAGPUTheServerStaysLiveAndServesOnTheCPU(t *testing.T) {
	t.Parallel() // a server of its own, mostly waiting
	env := fakedriver.NoGPUHost(t)
	url, cmd, log := startServerLogged(t, env, "-init-deadline", "100ms")
	get(t, url+health.ReadyPath) // the first readiness probe starts init
	st := waitForState(t, url, "failed")
	assert.Equal(t, "no-gpu", st.Class)
	assert.True(t, st.Degraded)
	assert.True(t, st.Ready, "ready: serving without a GPU")
	assert.True(t, st.Live)
	assert.Contains(t, st.Reason, "degraded: serving without a GPU")
	require.NotNil(t, st.BringUp)
	assert.Equal(t, 2, st.BringUp.Attempts, "a preflight child for cuda, then one for hip")
	require.NotNil(t, st.Failure)
	wantKind := "no-driver" // neither runtime loads
	if fakedriver.Loadable(env, fakedriver.CUDANames...) || fakedriver.Loadable(env, fakedriver.HIPNames...) {
		wantKind = "no-device" // one did (Debian's HIP, say), found no device, and leads
	}
	assert.Equal(t, wantKind, st.Failure.Kind, st.Failure.Message)
	for _, path := range []string{health.LivePath, health.ReadyPath} {
		code, body := get(t, url+path)
		assert.Equal(t, http.StatusOK, code, "%s: %s", path, body)
	}
	code, body := get(t, url+"/v1/draw?n=4")
	require.Equal(t, http.StatusOK, code, body)
	var d drawResult
	require.NoError(t, json.Unmarshal([]byte(body), &d))
	assert.Equal(t, "cpu", d.Source)
	want := make([]uint32, 4)
	philox.FillCURAND(want, 42, 0)
	assert.Equal(t, want, d.Values, "device 0's stream, seeded as the flag says")
	assert.Empty(t, childtest.Children(cmd.Process.Pid), "no preflight child left")

	// Messages a person reads once: the fallback's log line, and every
	// string of the status, under 400 characters, none said twice.
	log.WaitFor(t, "serving on the CPU")
	for _, line := range log.Lines() {
		if strings.Contains(line, "level=WARN") {
			assert.Less(t, len(line), 400, "the fallback's log line: %s", line)
			t.Logf("the fallback's log line, %d characters: %s", len(line), line)
		}
	}
	_, body = get(t, url+health.StatusPath)
	var doc any
	require.NoError(t, json.Unmarshal([]byte(body), &doc))
	seen := map[string]string{}
	walkStrings(doc, "", func(path, s string) {
		assert.Less(t, len(s), 400, "%s is %d characters: %s", path, len(s), s)
		if len(s) > 40 { // a long message, said once; short words (a class, a kind) may recur
			if was, ok := seen[s]; ok {
				t.Errorf("%s repeats %s: %q", path, was, s)
			}
			seen[s] = path
		}
	})
}

// walkStrings calls f with each string in a decoded JSON document, and its path.
func walkStrings(v any, path string, f func(path, s string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			walkStrings(e, path+"."+k, f)
		}
	case []any:
		for i, e := range v {
			walkStrings(e, fmt.Sprintf("%s[%d]", path, i), f)
		}
	case string:
		f(path, v)
	}
}

// waitForState polls the status until its state is want, and returns it.
func waitForState(t *testing.T, url, want string) health.Status {
	t.Helper()
	return waitForStatus(t, url, func(s health.Status) bool { return s.State == want })
}

// waitForStatus polls the status until cond holds, and returns it. It fails
// t after 20 s, printing the last status it read.
func waitForStatus(t *testing.T, url string, cond func(health.Status) bool) health.Status {
	t.Helper()
	st, body, ok := pollStatus(t, url, 20*time.Second, cond)
	if !ok {
		t.Fatalf("the status never got there in 20s; last: %s", body)
	}
	return st
}

// pollStatus polls the status every 10 ms until cond holds or within has
// passed. It returns the last status read, its body, and whether cond held.
func pollStatus(t testing.TB, url string, within time.Duration, cond func(health.Status) bool) (health.Status, string, bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		_, body := get(t, url+health.StatusPath)
		var st health.Status
		require.NoError(t, json.Unmarshal([]byte(body), &st), body)
		if cond(st) {
			return st, body, true
		}
		if time.Now().After(deadline) {
			return st, body, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAStatusWaitThatTimesOutSaysTheLastStatus: a wait that never gets there
// reports the last status it read, not an empty one nor the first.
func TestAStatusWaitThatTimesOutSaysTheLastStatus(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"state":"step-%d"}`, served.Add(1))
	}))
	defer srv.Close()
	st, body, ok := pollStatus(t, srv.URL, 50*time.Millisecond, func(s health.Status) bool { return s.State == "ready" })
	assert.False(t, ok)
	last := fmt.Sprintf("step-%d", served.Load())
	assert.Equal(t, last, st.State, "the last status read")
	assert.Contains(t, body, last)
	assert.Greater(t, served.Load(), int64(1), "polled more than once")
}
