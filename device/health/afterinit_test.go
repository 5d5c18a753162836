package health_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var quiet = health.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

// watchedSim returns an initialized Runtime over a sim whose two devices
// its health watch watches.
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

func TestAnXidThatNeedsAResetTurnsReadinessOffWithin100ms(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "WithRestartOnDeviceLoss"}[restart], func(t *testing.T) {
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

// TestStatusIsOneMoment takes statuses while initializations finish, and
// checks that each agrees with its own state. (Before the status was read as
// of one state, 104 of 447,634 said "initializing" with a failure, a finish
// time or devices.)
func TestStatusIsOneMoment(t *testing.T) {
	var checked, initializing atomic.Int64
	for i := range 60 {
		var b *sim.Backend
		if i%2 == 0 {
			b = sim.New(sim.WithInitDelay(time.Duration(i%7) * 100 * time.Microsecond))
		} else {
			b = sim.New(sim.WithInitDelay(time.Duration(i%5)*100*time.Microsecond), sim.WithFailure(sim.NoDevice))
		}
		rt := device.New(b)
		h := health.New(rt, quiet)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for {
					s := h.Snapshot()
					checked.Add(1)
					switch s.State {
					case lazy.Uninitialized.String(), lazy.Initializing.String():
						initializing.Add(1)
						assert.Nil(t, s.Failure, "%s with a failure", s.State)
						assert.Nil(t, s.Init.Finished, "%s with a finish time", s.State)
						assert.Empty(t, s.Devices, "%s with devices", s.State)
						assert.Empty(t, s.Class)
					case lazy.Ready.String():
						assert.Nil(t, s.Failure)
						assert.NotNil(t, s.Init.Finished)
						assert.Len(t, s.Devices, 2)
						return
					case lazy.Failed.String():
						assert.NotNil(t, s.Failure)
						assert.NotNil(t, s.Init.Finished)
						assert.Empty(t, s.Devices)
						return
					}
				}
			})
		}
		wg.Wait()
		h.Close()
		rt.Shutdown(context.Background())
	}
	t.Logf("%d statuses, %d of them before the end", checked.Load(), initializing.Load())
}

// lossDuringRead loses device 1 while the status reads device 0's memory:
// between readiness and the list of losses, where a status that read each
// once would say ready beside a loss.
type lossDuringRead struct {
	*sim.Backend
	rt   *device.Runtime
	once sync.Once
}

func (b *lossDuringRead) ReadMemory(ordinal int) (driver.Memory, error) {
	if ordinal == 0 {
		b.once.Do(func() { _, _ = b.rt.ReportDriverCode(1, "cuLaunchKernel", 700) })
	}
	return b.Backend.ReadMemory(ordinal)
}

func (b *lossDuringRead) Unwrap() driver.Backend { return b.Backend }

// TestStatusReadinessAgreesWithItsLosses: a device lost while a status is
// read never gives a status that says ready beside a loss it lists.
func TestStatusReadinessAgreesWithItsLosses(t *testing.T) {
	b := &lossDuringRead{Backend: sim.New()}
	rt := device.New(b)
	b.rt = rt
	defer rt.Shutdown(context.Background())
	require.NoError(t, rt.Init(context.Background()))
	h := health.New(rt, quiet)
	defer h.Close()
	s := h.Snapshot()
	require.Len(t, s.Lost, 1, "device 1 was lost while the status read device 0")
	assert.False(t, s.Ready, "not ready beside the loss it lists: %+v", s)
	assert.Contains(t, s.Reason, "device 1")
}

// TestTheCanaryFindsADeviceThatNoLongerWorks: a device whose calls fail with
// a sticky error, which no engine call has met yet, is found by the canary
// within a period or so, off the probe path; the other device's canary
// passes and the status shows both.
func TestTheCanaryFindsADeviceThatNoLongerWorks(t *testing.T) {
	const period = 10 * time.Millisecond
	s, rt := watchedSim(t)
	h := health.New(rt, quiet, health.WithCanary(period))
	defer h.Close()
	code, _ := probe(t, h.Ready()) // ready: the canary starts
	require.Equal(t, http.StatusOK, code)
	require.Eventually(t, func() bool {
		st := status(t, h)
		return st.Devices[0].Canary != nil && st.Devices[1].Canary != nil
	}, 10*time.Second, time.Millisecond)
	st := status(t, h)
	assert.True(t, st.Devices[0].Canary.OK)
	assert.True(t, st.Devices[1].Canary.OK)

	start := time.Now()
	s.LoseDevice(1, 719)
	took := untilNotReady(t, h, start)
	assert.Less(t, took, period+100*time.Millisecond)
	t.Logf("from the device's failure to readiness 503, by the canary alone: %v (period %v)", took, period)
	st = status(t, h)
	require.Len(t, st.Lost, 1)
	assert.Equal(t, "canary", st.Lost[0].Source)
	assert.Equal(t, "CUDA_ERROR_LAUNCH_FAILED", st.Lost[0].Error.Name)
	assert.True(t, st.Devices[0].Canary.OK, "device 0 still passes")

	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	ready := h.Ready()
	ready.ServeHTTP(rec, req)
	assert.Zero(t, testing.AllocsPerRun(100, func() { rec.Body.Reset(); ready.ServeHTTP(rec, req) }),
		"readiness allocates nothing with the canary running")
}

func TestWithoutTheCanaryOnlyACallFindsTheDevice(t *testing.T) {
	s, rt := watchedSim(t)
	h := health.New(rt, quiet)
	defer h.Close()
	s.LoseDevice(1, 719)
	code, _ := probe(t, h.Ready())
	assert.Equal(t, http.StatusOK, code, "nothing has touched device 1 since it failed")
	assert.Nil(t, status(t, h).Devices[1].Canary)
	require.ErrorIs(t, rt.Canary(context.Background(), 1), device.ErrDeviceLost, "one canary, run by hand, finds it")
	code, _ = probe(t, h.Ready())
	assert.Equal(t, http.StatusServiceUnavailable, code)
}

// TestTheStatusReadsFreeMemory: the status carries each device's free memory,
// read when it is asked for (it was always null before), and none for a lost
// device.
func TestTheStatusReadsFreeMemory(t *testing.T) {
	s, rt := watchedSim(t)
	h := health.New(rt, quiet)
	defer h.Close()
	st := status(t, h)
	require.Len(t, st.Devices, 2)
	for _, d := range st.Devices {
		require.NotNil(t, d.FreeMemory, "device %d", d.Ordinal)
		assert.Equal(t, d.TotalMemory-sim.UsedMemory, *d.FreeMemory)
		assert.Equal(t, "sim", d.MemorySource)
	}
	s.InjectXid(1, 79)
	require.Eventually(t, func() bool { return (len(rt.Stats().Lost) > 0) }, 10*time.Second, time.Millisecond)
	st = status(t, h)
	assert.NotNil(t, st.Devices[0].FreeMemory)
	assert.Nil(t, st.Devices[1].FreeMemory, "a lost device's memory is not read")
}

// TestTheStatusListsQueuedCallsThatFailed: a queued call's failure leaves
// the runtime ready, and the status names it with the call site.
func TestTheStatusListsQueuedCallsThatFailed(t *testing.T) {
	rt := device.New(sim.New())
	defer rt.Shutdown(context.Background())
	bad := errors.New("a bad queued call")
	require.NoError(t, rt.LazyCall(context.Background(), func(context.Context) error { return bad }))
	require.NoError(t, rt.Init(context.Background()))
	h := health.New(rt, quiet)
	defer h.Close()
	s := h.Snapshot()
	assert.True(t, s.Ready)
	require.Len(t, s.FailedCalls, 1)
	assert.Contains(t, s.FailedCalls[0].Message, "a bad queued call")
	assert.Contains(t, s.FailedCalls[0].Site, "afterinit_test.go:")
}
