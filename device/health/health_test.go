package health_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
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
	const initDelay = 400 * time.Millisecond
	c := &devicetest.Counting{Backend: sim.New(sim.WithInitDelay(initDelay))}
	rt := device.New(c)
	h := health.New(rt)
	defer h.Close()
	// A probe that waited would take most of the init delay; the bound is
	// half of it, so that a loaded machine's scheduling delays do not count.
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

// TestHealthDecidesByTheFailuresClass: liveness fails only where a restart of
// the process can help (not-yet, once the init deadline has passed); readiness fails for every class, unless the
// server serves without a GPU, when it is 200 and the status says degraded.
func TestHealthDecidesByTheFailuresClass(t *testing.T) {
	for _, tc := range []struct {
		name       string
		failure    sim.Failure
		fallback   bool
		class      string
		driverName string
		ready      bool
		live       bool
	}{
		{"no device: no GPU here", sim.NoDevice, false, "no-gpu", "CUDA_ERROR_NO_DEVICE", false, true},
		{"no driver: no GPU here", sim.NoDriver, false, "no-gpu", "", false, true},
		{"803: needs an operator", sim.DriverMismatch, false, "needs-operator", "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", false, true},
		{"999: needs an operator", sim.Unknown, false, "needs-operator", "CUDA_ERROR_UNKNOWN", false, true},
		{"802 in-process: not yet, a restart may help", sim.NotReady, false, "not-yet", "CUDA_ERROR_SYSTEM_NOT_READY", false, false},
		{"no device, serving on the CPU", sim.NoDevice, true, "no-gpu", "CUDA_ERROR_NO_DEVICE", true, true},
		{"802 with a CPU fallback: not yet, so no CPU", sim.NotReady, true, "not-yet", "CUDA_ERROR_SYSTEM_NOT_READY", false, false},
		{"803 with a CPU fallback: a broken GPU never hides behind the CPU", sim.DriverMismatch, true, "needs-operator", "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := device.New(sim.New(sim.WithFailure(tc.failure)))
			require.NoError(t, rt.LazyCall(context.Background(), func(context.Context) error { return nil }))
			var logs bytes.Buffer
			opts := []health.Option{health.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))}
			if tc.fallback {
				opts = append(opts, health.WithCPUFallback())
			}
			h := health.New(rt, opts...)
			defer h.Close()
			_ = rt.Init(context.Background())
			code, body := probe(t, h.Ready())
			assert.Equal(t, map[bool]int{true: http.StatusOK, false: http.StatusServiceUnavailable}[tc.ready], code, body)
			if !tc.ready {
				assert.Contains(t, body, "("+tc.class+":", "readiness names the class")
				assert.Contains(t, body, tc.driverName)
			}
			if !tc.live {
				// Not yet: live while the GPU has the init deadline (here
				// the default 5 minutes) to come up; then a restart helps.
				code, body = probe(t, h.Live())
				assert.Equal(t, http.StatusOK, code, "within the init deadline: %s", body)
				h.Close()
				h = health.New(rt, append(opts, health.WithInitDeadline(time.Nanosecond))...)
				defer h.Close()
			}
			code, body = probe(t, h.Live())
			assert.Equal(t, map[bool]int{true: http.StatusOK, false: http.StatusServiceUnavailable}[tc.live], code, body)
			if !tc.live {
				assert.Contains(t, body, "a restart may succeed")
			}
			s := status(t, h)
			assert.Equal(t, "failed", s.State)
			assert.Equal(t, tc.class, s.Class)
			assert.Equal(t, tc.fallback && tc.ready, s.Degraded, "degraded: serving on the CPU")
			assert.Equal(t, tc.ready, s.Ready)
			assert.Equal(t, tc.live, s.Live)
			require.NotNil(t, s.Failure)
			assert.Equal(t, tc.class, s.Failure.Class)
			assert.Equal(t, tc.driverName, s.Failure.Name)
			assert.NotEmpty(t, s.Failure.Hint)
			require.Len(t, s.Failure.NotRun, 1)
			assert.Contains(t, s.Failure.NotRun[0], "health_test.go")
			if tc.fallback && tc.ready {
				assert.Contains(t, logs.String(), "no GPU here; serving on the CPU (degraded)")
			} else {
				assert.Contains(t, logs.String(), "initialization failed")
			}
			assert.Contains(t, logs.String(), "class="+tc.class)
		})
	}
}

func TestHangingInitFailsLivenessAfterTheDeadline(t *testing.T) {
	rt := device.New(sim.New(sim.WithFailure(sim.Hang)))
	h := health.New(rt, health.WithInitDeadline(150*time.Millisecond))
	defer h.Close()
	code, _ := probe(t, h.Ready()) // starts the init that hangs
	assert.Equal(t, http.StatusServiceUnavailable, code)
	code, _ = probe(t, h.Live())
	assert.Equal(t, http.StatusOK, code, "within the deadline the process is alive")
	require.Eventually(t, func() bool { code, _ := probe(t, h.Live()); return code == http.StatusServiceUnavailable },
		10*time.Second, 10*time.Millisecond)
	_, body := probe(t, h.Live())
	assert.Contains(t, body, "past its deadline of 150ms: the process is wedged")
	s := status(t, h)
	assert.Equal(t, "initializing", s.State)
	assert.Equal(t, "init", s.Init.Running, "status says which phase hangs")
	assert.Greater(t, s.Init.RunningSeconds, 0.15)
	for range 5 {
		start := time.Now()
		code, _ := probe(t, h.Ready())
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Less(t, time.Since(start), time.Second, "readiness answers while init hangs")
	}
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

func TestALostDeviceTurnsReadinessOff(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "WithRestartOnDeviceLoss"}[restart], func(t *testing.T) {
			s := sim.New()
			rt := device.New(s)
			var opts []health.Option
			if restart {
				opts = append(opts, health.WithRestartOnDeviceLoss())
			}
			h := health.New(rt, opts...)
			defer h.Close()
			require.NoError(t, rt.Init(context.Background()))
			code, _ := probe(t, h.Ready())
			require.Equal(t, http.StatusOK, code)
			s.LoseDevice(1, 719)
			err := rt.Do(context.Background(), 1, func() error { return nil })
			require.ErrorIs(t, rt.ReportError(1, err), device.ErrDeviceLost)
			code, body := probe(t, h.Ready())
			assert.Equal(t, http.StatusServiceUnavailable, code)
			assert.Contains(t, body, "device 1 lost")
			code, _ = probe(t, h.Live())
			assert.Equal(t, map[bool]int{false: http.StatusOK, true: http.StatusServiceUnavailable}[restart], code)
			st := status(t, h)
			require.Len(t, st.Lost, 1)
			assert.Equal(t, 1, st.Lost[0].Ordinal)
			assert.Equal(t, "CUDA_ERROR_LAUNCH_FAILED", st.Lost[0].Error.Name)
			assert.Equal(t, "device-lost", st.Lost[0].Error.Kind)
		})
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

// TestConcurrentProbesAgreeAndOnlyMoveForward: probes racing with the
// initialization they start each give an answer that agrees with itself
// (a status's ready and state), liveness never fails, and no goroutine sees
// readiness go back once it was ready.
func TestConcurrentProbesAgreeAndOnlyMoveForward(t *testing.T) {
	rt := device.New(sim.New(sim.WithInitDelay(50 * time.Millisecond)))
	h := health.New(rt)
	defer h.Close()
	var wg sync.WaitGroup
	var sawInitializing atomic.Bool
	for g := range 64 {
		wg.Go(func() {
			wasReady := false
			for range 50 {
				var ready bool
				switch g % 3 {
				case 0:
					code, body := probe(t, h.Ready())
					ready = code == http.StatusOK
					if !ready {
						assert.Contains(t, body, "initializing", "the only reason not to be ready here")
					}
				case 1:
					code, body := probe(t, h.Live())
					assert.Equal(t, http.StatusOK, code, body)
					continue
				default:
					st := status(t, h)
					ready = st.Ready
					assert.Equal(t, st.Ready, st.State == "ready", "ready agrees with the state: %+v", st)
					assert.True(t, st.Live)
				}
				assert.False(t, wasReady && !ready, "readiness went back after it was ready")
				wasReady = wasReady || ready
				if !ready {
					sawInitializing.Store(true)
				}
			}
		})
	}
	wg.Wait()
	assert.True(t, sawInitializing.Load(), "the first probes came while init ran")
	require.NoError(t, rt.Init(context.Background()))
	code, _ := probe(t, h.Ready())
	assert.Equal(t, http.StatusOK, code, "ready once init is done")
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

func TestLiveAndReadyAllocateNothingOnAReadyRuntime(t *testing.T) {
	rt := device.New(sim.New())
	require.NoError(t, rt.Init(context.Background()))
	var logs bytes.Buffer // probes run on this goroutine only
	h := health.New(rt, health.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	defer h.Close()
	for name, check := range map[string]func() (bool, string){"live": h.Liveness, "ready": h.Readiness} {
		ok, _ := check()
		require.True(t, ok, name)
		assert.Zero(t, testing.AllocsPerRun(1000, func() { check() }), name)
	}
	// A lost device fails readiness, whose reason names it; liveness, which
	// stays true without WithRestartOnDeviceLoss, still allocates nothing.
	rt.ReportDriverCode(1, "cuLaunchKernel", 700)
	ok, _ := h.Readiness()
	require.False(t, ok)
	ok, _ = h.Liveness()
	require.True(t, ok)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { h.Liveness() }), "live, with a device lost")
	h.Readiness()
	assert.Equal(t, 1, strings.Count(logs.String(), "gpuinit: device lost"), "the loss is logged once:\n%s", logs.String())
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

// TestPreflightChildrenNeverFailLiveness: children and the waits between
// their retries run in other processes, under their own deadlines, so
// liveness stays 200 however long they take, while readiness says where the
// bring-up stands.
func TestPreflightChildrenNeverFailLiveness(t *testing.T) {
	rt := waitingRuntime(t)
	h := health.New(rt, health.WithInitDeadline(10*time.Millisecond))
	defer h.Close()
	probe(t, h.Ready()) // starts init
	require.Eventually(t, func() bool { return rt.Stats().BringUp.Attempts >= 3 }, 20*time.Second, 5*time.Millisecond)
	started := rt.Stats().Started
	require.Greater(t, time.Since(started), 10*time.Millisecond, "past the init deadline")
	code, body := probe(t, h.Live())
	assert.Equal(t, http.StatusOK, code, body)
	code, body = probe(t, h.Ready())
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "initializing: ")
	assert.Contains(t, body, "not-yet")
	s := status(t, h)
	require.NotNil(t, s.BringUp)
	assert.True(t, s.BringUp.Preflight)
	assert.GreaterOrEqual(t, s.BringUp.Attempts, 3)
	assert.Equal(t, "not-yet", s.BringUp.LastClass)
	require.NotNil(t, s.BringUp.LastError)
	assert.Equal(t, "CUDA_ERROR_SYSTEM_NOT_READY", s.BringUp.LastError.Name)
	assert.Nil(t, s.BringUp.InProcess, "nothing of the driver ran in this process")
}

func TestProbesAllocateNothingWhileAPreflightRunsOrWaits(t *testing.T) {
	rt := waitingRuntime(t)
	h := health.New(rt, health.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer h.Close()
	probe(t, h.Ready())
	require.Eventually(t, func() bool { return rt.Stats().BringUp.Attempts >= 1 }, 20*time.Second, time.Millisecond)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	for name, hh := range map[string]http.Handler{"live": h.Live(), "ready": h.Ready()} {
		hh.ServeHTTP(rec, req)
		assert.Zero(t, testing.AllocsPerRun(1000, func() { rec.Body.Reset(); hh.ServeHTTP(rec, req) }), name)
	}
	for name, check := range map[string]func() (bool, string){"Liveness": h.Liveness, "Readiness": h.Readiness} {
		assert.Zero(t, testing.AllocsPerRun(1000, func() { check() }), name)
	}
}

// This test binary is also the preflight children of waitingRuntime.
func TestMain(m *testing.M) {
	device.ServePreflight()
	os.Exit(m.Run())
}

// TestWithoutAnInitDeadlineLivenessNeverFailsForTime: WithInitDeadline(0)
// never fails liveness for time, a not-yet failure's included.
func TestWithoutAnInitDeadlineLivenessNeverFailsForTime(t *testing.T) {
	rt := device.New(sim.New(sim.WithFailure(sim.NotReady)))
	_ = rt.Init(context.Background())
	for _, d := range []time.Duration{0, -time.Second} {
		h := health.New(rt, health.WithInitDeadline(d))
		code, body := probe(t, h.Live())
		assert.Equal(t, http.StatusOK, code, "deadline %s: %s", d, body)
		require.NoError(t, h.Close())
	}
	h := health.New(rt, health.WithInitDeadline(time.Nanosecond))
	defer h.Close()
	code, _ := probe(t, h.Live())
	assert.Equal(t, http.StatusServiceUnavailable, code, "with a deadline, a not-yet failure past it fails liveness")
}
