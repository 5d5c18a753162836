package health_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func probe(t *testing.T, h http.Handler) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	return rec.Code, rec.Body.String()
}

func status(t *testing.T, h *health.Health) health.Status {
	t.Helper()
	code, body := probe(t, h.Status())
	require.Equal(t, http.StatusOK, code)
	var s health.Status
	require.NoError(t, json.Unmarshal([]byte(body), &s), body)
	assert.Equal(t, health.StatusSchema, s.Schema)
	return s
}

func TestAutoInitStartsOnceAndReadinessNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const initDelay = 400 * time.Millisecond
		c := &devicetest.Counting{Backend: sim.New(sim.WithInitDelay(initDelay))}
		rt := device.New(c)
		defer func() { assert.NoError(t, rt.Shutdown(context.Background())) }()
		h := health.New(rt)
		defer h.Close()
		// The clock is synctest's: it moves only while every goroutine
		// waits, so a probe that waited for init would take the whole init
		// delay, and one that does not takes none of it.
		for range 20 {
			start := time.Now()
			code, body := probe(t, h.Ready())
			assert.Equal(t, http.StatusServiceUnavailable, code)
			assert.Contains(t, body, "initializing")
			assert.Less(t, time.Since(start), initDelay/2, "readiness never waits for init")
		}
		require.Eventually(t, func() bool { code, _ := probe(t, h.Ready()); return code == http.StatusOK }, 10*time.Second, 5*time.Millisecond)
		assert.Equal(t, int64(1), c.Calls().Init, "the first probe started Init, once")
		s := status(t, h)
		assert.Equal(t, "ready", s.State)
		assert.True(t, s.Ready && s.Live)
		assert.Len(t, s.Devices, 2)
		assert.Equal(t, "GPU-5e1d0c0a-9a7f-4b6e-8d2c-000000000000", s.Devices[0].UUID)
		assert.Equal(t, sim.DriverVersion, s.DriverVersion)
		assert.GreaterOrEqual(t, s.Init.DurationMillis, float64(initDelay.Milliseconds()))
		require.NotNil(t, s.ReadAt)
	})
}

func TestWithoutAutoInitNothingStarts(t *testing.T) {
	c := &devicetest.Counting{Backend: sim.New()}
	h := health.New(device.New(c), health.WithoutAutoInit())
	defer h.Close()
	code, body := probe(t, h.Ready())
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "not initialized")
	code, _ = probe(t, h.Live())
	assert.Equal(t, http.StatusOK, code)
	assert.Zero(t, c.Calls().Total())
}

// TestProbesNeverReadTheBackend: versions and devices are read once, when a
// probe first sees initialization finished, and served from there.
func TestProbesNeverReadTheBackend(t *testing.T) {
	c := &devicetest.Counting{Backend: sim.New()}
	rt := device.New(c)
	require.NoError(t, rt.Init(context.Background()))
	h := health.New(rt, health.WithoutAutoInit()) // no background Init to race the count
	defer h.Close()
	s := status(t, h)
	require.Equal(t, sim.DriverVersion, s.DriverVersion)
	read := c.Calls()
	for range 20 {
		probe(t, h.Ready())
		probe(t, h.Live())
		status(t, h)
	}
	assert.Equal(t, read, c.Calls(), "no probe called the backend again")
}

func TestLiveNeverTouchesTheRuntimeOrBackend(t *testing.T) {
	c := &devicetest.Counting{Backend: sim.New()}
	rt := device.New(c)
	h := health.New(rt)
	defer h.Close()
	for range 100 {
		code, body := probe(t, h.Live())
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "ok\n", body)
	}
	assert.Zero(t, c.Calls().Total(), "no call into the backend")
	assert.False(t, (rt.Stats().State == lazy.Ready), "liveness never initializes")
}

func TestCloseReleasesTheBackgroundInitEvenWhileItHangs(t *testing.T) {
	h := health.New(device.New(sim.New(sim.WithFailure(sim.Hang))))
	probe(t, h.Ready())
	done := make(chan struct{})
	go func() { _ = h.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for a hung init")
	}
}

func TestMountServesTheOpenInferenceProtocolPaths(t *testing.T) {
	h := health.New(device.New(sim.New()))
	defer h.Close()
	mux := http.NewServeMux()
	h.Mount(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, path := range []string{health.LivePath, health.ReadyPath, health.StatusPath} {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.NotEqual(t, http.StatusNotFound, resp.StatusCode, path)
	}
	resp, err := http.Post(srv.URL+health.ReadyPath, "text/plain", strings.NewReader(""))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

// TestCloseAndTheFirstProbeAgree: whichever of Close and the first readiness
// probe comes first, the probe's answer says what happened: "a probe started
// it" only if the initialization did start, and "probes do not start it"
// only if nothing ever starts it.
func TestCloseAndTheFirstProbeAgree(t *testing.T) {
	outcomes := map[string]int{}
	for range 200 {
		rt := device.New(sim.New(sim.WithInitDelay(time.Millisecond)))
		h := health.New(rt)
		var wg sync.WaitGroup
		var reason string
		wg.Go(func() { _, reason = h.Readiness() })
		wg.Go(func() { _ = h.Close() })
		wg.Wait()
		_ = h.Close() // whichever came first, nothing of Health's is left running after Close
		switch {
		case strings.Contains(reason, "a probe started it"):
			outcomes["probe first"]++
			assert.NotEqual(t, lazy.Uninitialized, rt.Stats().State, "the probe said it started init")
		case strings.Contains(reason, "probes do not start it"):
			outcomes["close first"]++
			ok, _ := h.Readiness()
			assert.False(t, ok)
			assert.Equal(t, lazy.Uninitialized, rt.Stats().State, "after Close, probes start nothing")
		default:
			t.Fatalf("the first probe's reason is neither: %q", reason)
		}
	}
	t.Logf("outcomes over 200 races: %v", outcomes)
}

// waitingRuntime returns a Runtime whose preflight children (this test
// binary, from TestMain) keep answering 802, so that its initialization
// stays in preflight and waiting phases for RetryFor.
func waitingRuntime(t testing.TB) *device.Runtime {
	t.Helper()
	rt := device.New(sim.New())
	if err := rt.UsePreflight(device.Preflight{Backoff: 50 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		RetryFor: time.Minute, Command: []string{os.Args[0], "-test.run=^$"}}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GPUINIT_PREFLIGHT", "")
	t.Setenv(sim.EnvFail, string(sim.NotReady))
	return rt
}

// This test binary is also the preflight children of waitingRuntime.
func TestMain(m *testing.M) {
	device.ServePreflight()
	os.Exit(m.Run())
}

var quiet = health.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

func watchedSim(t *testing.T) (*sim.Backend, *device.Runtime) {
	t.Helper()
	s := sim.New()
	rt := device.New(s)
	t.Cleanup(func() { assert.NoError(t, rt.Shutdown(context.Background())) })
	require.NoError(t, rt.Init(context.Background()))
	require.Eventually(t, func() bool { h := rt.Stats().Health; return len(h) == 2 && h[0].Watched && h[1].Watched },
		10*time.Second, time.Millisecond)
	return s, rt
}

// untilNotReady returns how long after start readiness first said no.
func untilNotReady(t *testing.T, h *health.Health, start time.Time) time.Duration {
	t.Helper()
	require.Eventually(t, func() bool { ok, _ := h.Readiness(); return !ok }, 10*time.Second, 50*time.Microsecond)
	return time.Since(start)
}
