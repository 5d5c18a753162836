package health_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
			assert.Contains(t, s.Failure.NotRun[0], "probes_test.go")
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

// watchedSim returns an initialized Runtime over a sim whose two devices
// its health watch watches.
func TestAnXidThatNeedsAResetTurnsReadinessOffWithin100ms(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "WithRestartOnDeviceLoss"}[restart], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, rt := watchedSim(t)
				opts := []health.Option{quiet}
				if restart {
					opts = append(opts, health.WithRestartOnDeviceLoss())
				}
				h := health.New(rt, opts...)
				defer h.Close()
				code, _ := probe(t, h.Ready())
				require.Equal(t, http.StatusOK, code)

				start := time.Now()
				s.InjectXid(1, 79)
				took := untilNotReady(t, h, start)
				assert.Less(t, took, 100*time.Millisecond)
				t.Logf("from the Xid to readiness 503: %v", took)

				code, body := probe(t, h.Ready())
				assert.Equal(t, http.StatusServiceUnavailable, code)
				assert.Contains(t, body, "device 1 lost")
				assert.Contains(t, body, "(xid)")
				assert.Contains(t, body, "fallen off the bus")
				code, _ = probe(t, h.Live())
				assert.Equal(t, map[bool]int{false: http.StatusOK, true: http.StatusServiceUnavailable}[restart], code)

				st := status(t, h)
				require.Len(t, st.Lost, 1)
				assert.Equal(t, 1, st.Lost[0].Ordinal)
				assert.Equal(t, "xid", st.Lost[0].Source)
				assert.Equal(t, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", st.Lost[0].Error.Name)
				assert.Equal(t, 79, st.Lost[0].Error.Code)
				require.Len(t, st.Devices, 2)
				require.NotNil(t, st.Devices[1].Health)
				assert.Equal(t, map[string]int64{"xid 79": 1}, st.Devices[1].Health.Counted)
				assert.NoError(t, rt.CheckDevice(0), "the other device serves")
			})
		})
	}
}

func TestAnApplicationsXidIsCountedAndReadinessStays(t *testing.T) {
	s, rt := watchedSim(t)
	h := health.New(rt, quiet)
	defer h.Close()
	s.InjectXid(0, 13)
	require.Eventually(t, func() bool { return rt.Stats().Health[0].Counted["xid 13"] == 1 }, 10*time.Second, time.Millisecond)
	code, _ := probe(t, h.Ready())
	assert.Equal(t, http.StatusOK, code)
	st := status(t, h)
	assert.Empty(t, st.Lost)
	require.NotNil(t, st.Devices[0].Health)
	assert.True(t, st.Devices[0].Health.Watched)
	assert.Equal(t, map[string]int64{"xid 13": 1}, st.Devices[0].Health.Counted)
	assert.Equal(t, map[int]int64{0: 1}, st.ErrorsReported)
}

func TestAHungCallTurnsReadinessOffWithinItsDeadlinePlus100ms(t *testing.T) {
	const deadline = 50 * time.Millisecond
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "WithRestartOnDeviceLoss"}[restart], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, rt := watchedSim(t)
				rt.SetCallDeadline(deadline)
				opts := []health.Option{quiet}
				if restart {
					opts = append(opts, health.WithRestartOnDeviceLoss())
				}
				h := health.New(rt, opts...)
				defer h.Close()
				release := make(chan struct{})
				var wg sync.WaitGroup
				defer wg.Wait()
				defer close(release)
				start := time.Now()
				wg.Go(func() { _ = rt.Do(context.Background(), 0, func() error { <-release; return nil }) })
				took := untilNotReady(t, h, start)
				assert.Less(t, took, deadline+100*time.Millisecond)
				assert.GreaterOrEqual(t, took, deadline, "not before the deadline")
				t.Logf("from the call's start to readiness 503: %v (deadline %v)", took, deadline)
				_, body := probe(t, h.Ready())
				assert.Contains(t, body, "(deadline)")
				code, _ := probe(t, h.Live())
				assert.Equal(t, map[bool]int{false: http.StatusOK, true: http.StatusServiceUnavailable}[restart], code,
					"a wedged thread: a restart helps")
				st := status(t, h)
				require.Len(t, st.Lost, 1)
				assert.Equal(t, "deadline", st.Lost[0].Source)
				assert.Equal(t, "device-lost", st.Lost[0].Error.Kind)
			})
		})
	}
}

func TestProbesAllocateNothingWithTheWatchRunning(t *testing.T) {
	s, rt := watchedSim(t)
	h := health.New(rt, quiet)
	defer h.Close()
	s.InjectXid(0, 13) // the watch has worked, and counted
	require.Eventually(t, func() bool { return rt.Stats().Health[0].Counted["xid 13"] == 1 }, 10*time.Second, time.Millisecond)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	for name, hh := range map[string]http.Handler{"live": h.Live(), "ready": h.Ready()} {
		hh.ServeHTTP(rec, req)
		assert.Zero(t, testing.AllocsPerRun(1000, func() { rec.Body.Reset(); hh.ServeHTTP(rec, req) }), name)
	}
}

func TestADegradedDeviceKeepsReadinessUnlessTheServerSaysOtherwise(t *testing.T) {
	remap := healthwatch.Event{Ordinal: 1, Kind: healthwatch.KindRemap, Action: healthwatch.Degrade,
		Message: "a row remap is pending", Hint: "reset the GPU to apply it"}
	for _, c := range []struct {
		name  string
		opts  []health.Option
		ready bool
	}{
		{"by default a degraded device serves", nil, true},
		{"WithDegradedNotReady takes the pod out of service", []health.Option{health.WithDegradedNotReady()}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, rt := watchedSim(t)
			h := health.New(rt, append([]health.Option{quiet}, c.opts...)...)
			defer h.Close()
			s.InjectHealthEvent(remap)
			for st := rt.Stats(); st.Health[1].Verdict != healthwatch.VerdictDegraded; st = rt.Stats() {
				<-st.Changed()
			}
			ready, reason := h.Readiness()
			assert.Equal(t, c.ready, ready, reason)
			if !c.ready {
				assert.Contains(t, reason, "device 1 degraded: row-remap: a row remap is pending")
			}
			live, _ := h.Liveness()
			assert.True(t, live, "a restart cannot help a degraded device")
			dh := status(t, h).Devices[1].Health
			require.NotNil(t, dh)
			assert.Equal(t, healthwatch.VerdictDegraded, dh.Verdict)
			require.Len(t, dh.Conditions, 1)
			assert.Equal(t, "reset the GPU to apply it", dh.Conditions[0].Hint)
		})
	}
}
