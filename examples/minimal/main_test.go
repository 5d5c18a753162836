//go:build linux

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
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

func TestMain(m *testing.M) { childtest.MainOrProgram(m, "minimal", main) }

// readmeHeading is the README's section that shows this program.
const readmeHeading = "## A complete small server\n"

// TestTheREADMEShowsThisProgram: the README's first program is this file,
// from its package clause to its end, as it is. What a reader copies
// compiles, and the tests below run it; it never drifts.
func TestTheREADMEShowsThisProgram(t *testing.T) {
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	_, program, ok := strings.Cut(string(src), "\npackage main\n")
	require.True(t, ok, "main.go has a package clause")
	want := "```go\npackage main\n" + program + "```\n"

	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), readmeHeading)
	require.True(t, ok, "the README has a section %q", strings.TrimSpace(readmeHeading))
	start := strings.Index(section, "```go\n")
	require.GreaterOrEqual(t, start, 0, "the section shows a Go block")
	require.Equal(t, strings.Index(string(readme), "```go\n"), len(readme)-len(section)+start,
		"the README's first Go block is this program")
	end := strings.Index(section[start:], "\n```\n")
	require.Positive(t, end)
	require.Equal(t, want, section[start:start+end+len("\n```\n")],
		"the README's server is not examples/minimal/main.go: copy it from its package clause on")
}

// values are what device 0 draws first after ManualSeed(0, 42), on the
// device and on the CPU alike.
const values = "[2632642643 2012563771 314527917 1463989207]\n"

// start runs the program on a free port with env added, and returns its
// base URL and the process, which the test's cleanup kills if it still runs.
func start(t *testing.T, env []string) (string, *exec.Cmd) {
	t.Helper()
	s := childtest.StartServer(t, childtest.Program(t), env, regexp.MustCompile(`listening on (\S+)`), "-addr", "127.0.0.1:0")
	return s.URL, s.Cmd
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// stop sends SIGTERM and checks that the program exits 0 within its 10 s
// shutdown budget and a margin.
func stop(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		assert.NoError(t, err, "SIGTERM: exit 0")
	case <-time.After(20 * time.Second):
		t.Fatal("the program did not exit within 20 s of SIGTERM")
	}
}

// TestTheServerOnEachHost runs the program as a user would: the draw waits
// for the initialization, then comes from the GPU, or from the CPU where the
// host has none, with the same values; a broken GPU is never served around
// on the CPU. SIGTERM ends it with exit 0 each time.
func TestTheServerOnEachHost(t *testing.T) {
	for _, tc := range []struct {
		name         string
		env          func(t *testing.T) []string
		drawCode     int
		draw         string // what the draw's body holds
		ready        int
		class        string // the status's class
		degraded     bool
		backendAfter string // the status's backend
	}{
		{"a GPU (sim): draws on the device",
			func(*testing.T) []string { return []string{"GPUINIT_BACKEND=sim"} },
			http.StatusOK, values, http.StatusOK, "", false, "sim"},
		{"no GPU: draws the same values on the CPU, ready as degraded",
			func(t *testing.T) []string { return append(fakedriver.NoGPUHost(t), "GPUINIT_BACKEND=") },
			http.StatusOK, values, http.StatusOK, "no-gpu", true, "auto"},
		{"a broken GPU (driver mismatch): 503, never the CPU",
			func(*testing.T) []string { return []string{"GPUINIT_BACKEND=sim", "GPUINIT_SIM_FAIL=driver-mismatch"} },
			http.StatusServiceUnavailable, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)", http.StatusServiceUnavailable, "needs-operator", false, "sim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, cmd := start(t, tc.env(t))
			code, body := get(t, url+"/draw")
			assert.Equal(t, tc.drawCode, code, body)
			assert.Contains(t, body, tc.draw)
			code, body = get(t, url+health.ReadyPath)
			assert.Equal(t, tc.ready, code, body)
			_, body = get(t, url+health.StatusPath)
			var st health.Status
			require.NoError(t, json.Unmarshal([]byte(body), &st), body)
			assert.Equal(t, tc.class, st.Class, body)
			assert.Equal(t, tc.degraded, st.Degraded, body)
			assert.Equal(t, tc.backendAfter, st.Backend, body)
			stop(t, cmd)
		})
	}
}

// TestSIGTERMEndsAnInitThatHangs: the driver's init hangs in the preflight
// child; SIGTERM still ends the program, with exit 0.
func TestSIGTERMEndsAnInitThatHangs(t *testing.T) {
	url, cmd := start(t, []string{"GPUINIT_BACKEND=sim", "GPUINIT_SIM_FAIL=hang"})
	code, body := get(t, url+health.ReadyPath)
	assert.Equal(t, http.StatusServiceUnavailable, code, body)
	assert.Contains(t, body, "initializing")
	stop(t, cmd)
}
