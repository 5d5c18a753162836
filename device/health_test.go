package device_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device/health"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitStats waits on Stats.Changed until ok holds of the Runtime's stats,
// failing the test after a bound no loaded machine reaches.
func waitStats(t *testing.T, rt *device.Runtime, what string, ok func(device.Stats) bool) device.Stats {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		st := rt.Stats()
		if ok(st) {
			return st
		}
		select {
		case <-st.Changed():
		case <-timeout:
			t.Fatalf("never %s; health: %+v", what, st.Health)
		}
	}
}

// verdictIs is a wait condition: device ordinal's verdict is v.
func verdictIs(ordinal int, v healthwatch.Verdict) func(device.Stats) bool {
	return func(st device.Stats) bool { return len(st.Health) > ordinal && st.Health[ordinal].Verdict == v }
}

// openSim opens a Runtime over a sim backend of two devices, initialized,
// with its health watch watching both.
func openSim(t *testing.T) (*device.Runtime, *sim.Backend) {
	t.Helper()
	s := sim.New(sim.WithDevices(2))
	rt := device.New(s)
	t.Cleanup(func() { rt.Shutdown(context.Background()) })
	require.NoError(t, rt.Init(context.Background()))
	waitStats(t, rt, "watched", func(st device.Stats) bool {
		return verdictIs(0, healthwatch.VerdictHealthy)(st) && verdictIs(1, healthwatch.VerdictHealthy)(st)
	})
	return rt, s
}

func TestEachDevicesVerdictFollowsTheDriversOwnWord(t *testing.T) {
	recovery := func(a healthwatch.RecoveryAction, action healthwatch.Action) healthwatch.Event {
		return healthwatch.Event{Ordinal: 1, Kind: healthwatch.KindRecovery, Action: action, Recovery: a, Message: "recovery action " + a.String()}
	}
	cases := []struct {
		name    string
		events  []healthwatch.Event
		verdict healthwatch.Verdict
		reason  string // in the verdict's reason
		lost    bool
	}{
		{"a recovery action of reset loses the device",
			[]healthwatch.Event{recovery(healthwatch.RecoveryResetGPU, healthwatch.Lose)},
			healthwatch.VerdictUnhealthy, "lost", true},
		{"a reboot, too",
			[]healthwatch.Event{recovery(healthwatch.RecoveryRebootNode, healthwatch.Lose)},
			healthwatch.VerdictUnhealthy, "lost", true},
		{"a drain degrades it",
			[]healthwatch.Event{recovery(healthwatch.RecoveryDrain, healthwatch.Degrade)},
			healthwatch.VerdictDegraded, "recovery action drain", false},
		{"a pending remap degrades it",
			[]healthwatch.Event{{Ordinal: 1, Kind: healthwatch.KindRemap, Action: healthwatch.Degrade, Message: "a row remap is pending"}},
			healthwatch.VerdictDegraded, "row-remap: a row remap is pending", false},
		{"a pending remap that a reset applied is healthy again",
			[]healthwatch.Event{
				{Ordinal: 1, Kind: healthwatch.KindRemap, Action: healthwatch.Degrade, Message: "pending"},
				{Ordinal: 1, Kind: healthwatch.KindRemap, Action: healthwatch.Recover, Message: "applied"}},
			healthwatch.VerdictHealthy, "", false},
		{"a ring hang loses it",
			[]healthwatch.Event{{Ordinal: 1, Kind: healthwatch.KindRingHang, Action: healthwatch.Lose, Message: "the gfx ring hung"}},
			healthwatch.VerdictUnhealthy, "gfx ring hung", true},
		{"a reset after the loss says when a new process may use it",
			[]healthwatch.Event{recovery(healthwatch.RecoveryResetGPU, healthwatch.Lose), recovery(healthwatch.RecoveryNone, healthwatch.Recover)},
			healthwatch.VerdictUnhealthy, "a new process may use it", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt, s := openSim(t)
			for _, ev := range c.events {
				s.InjectHealthEvent(ev)
			}
			last := c.events[len(c.events)-1]
			st := waitStats(t, rt, "judged", func(st device.Stats) bool {
				h := st.Health[1]
				return h.Verdict == c.verdict && (last.Action != healthwatch.Recover || !h.Recovered.IsZero())
			})
			h := st.Health[1]
			assert.Contains(t, h.Reason, c.reason)
			assert.False(t, h.Since.IsZero(), "since when")
			assert.Equal(t, c.lost, len(st.Lost) == 1, "lost")
			assert.Equal(t, healthwatch.VerdictHealthy, st.Health[0].Verdict, "the other device is healthy")
			if last.Kind == healthwatch.KindRecovery {
				assert.Equal(t, last.Recovery, h.Recovery)
			}
		})
	}
}

// TestALostGPUIsUsableAgainOnlyAfterAReset: after an Xid 79, the reason
// says a new process may use the GPU only when the driver says it was
// reset; a fabric healthy again, or a drain that ended, recovers only its own
// condition. applied tells when the last event is in the Stats.
func TestALostGPUIsUsableAgainOnlyAfterAReset(t *testing.T) {
	fabric := func(action healthwatch.Action, words string) healthwatch.Event {
		return healthwatch.Event{Ordinal: 1, Kind: healthwatch.KindFabric, Action: action, Message: "the GPU's fabric: " + words,
			Fabric: &healthwatch.FabricState{State: 3, Words: words}}
	}
	recovery := func(a healthwatch.RecoveryAction, action healthwatch.Action) healthwatch.Event {
		return healthwatch.Event{Ordinal: 1, Kind: healthwatch.KindRecovery, Action: action, Recovery: a, Message: "recovery action " + a.String()}
	}
	fabricIs := func(words string) func(device.DeviceHealth) bool {
		return func(h device.DeviceHealth) bool { return h.Fabric != nil && h.Fabric.Words == words }
	}
	cases := []struct {
		name    string
		events  []healthwatch.Event
		applied func(device.DeviceHealth) bool
		usable  bool
	}{
		{"a fabric healthy again does not recover the loss",
			[]healthwatch.Event{fabric(healthwatch.Degrade, "limited"), fabric(healthwatch.Recover, "healthy")},
			fabricIs("healthy"), false},
		{"nor does a benign fabric change after that",
			[]healthwatch.Event{fabric(healthwatch.Lose, "unhealthy"), fabric(healthwatch.Recover, "healthy"), fabric(healthwatch.Inform, "healthy, again")},
			fabricIs("healthy, again"), false},
		{"nor a drain that ended",
			[]healthwatch.Event{recovery(healthwatch.RecoveryDrain, healthwatch.Degrade), recovery(healthwatch.RecoveryNone, healthwatch.Recover)},
			func(h device.DeviceHealth) bool { return h.Recovery == healthwatch.RecoveryNone }, false},
		{"the recovery action back to none after a reset does",
			[]healthwatch.Event{recovery(healthwatch.RecoveryResetGPU, healthwatch.Lose), recovery(healthwatch.RecoveryNone, healthwatch.Recover)},
			func(h device.DeviceHealth) bool { return h.Recovery == healthwatch.RecoveryNone }, true},
		{"so does AMD's post-reset event",
			[]healthwatch.Event{{Ordinal: 1, Kind: healthwatch.KindReset, Action: healthwatch.Recover, Message: "post-reset"}},
			func(h device.DeviceHealth) bool { return !h.Recovered.IsZero() }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt, s := openSim(t)
			s.InjectXid(1, 79)
			waitStats(t, rt, "lost", verdictIs(1, healthwatch.VerdictUnhealthy))
			for _, ev := range c.events {
				s.InjectHealthEvent(ev)
			}
			st := waitStats(t, rt, "the last event applied", func(st device.Stats) bool { return c.applied(st.Health[1]) })
			h := st.Health[1]
			assert.Equal(t, healthwatch.VerdictUnhealthy, h.Verdict, "lost for the rest of the process")
			assert.Contains(t, h.Reason, "FALLEN_OFF_THE_BUS")
			assert.Empty(t, h.Conditions, "each kind's own condition is cleared")
			assert.Equal(t, c.usable, strings.Contains(h.Reason, "a new process may use it"), "reason: %s", h.Reason)
			assert.Equal(t, c.usable, !h.Recovered.IsZero(), "Recovered")
		})
	}
}

func TestAHungMonitorCallMakesTheHealthUnknownNeverHealthy(t *testing.T) {
	rt, s := openSim(t)
	rt.SetCallDeadline(50 * time.Millisecond)
	release := s.HangHealthWatch(0, "nvmlEventSetWait_v2")
	defer release()
	st := waitStats(t, rt, "unknown", verdictIs(0, healthwatch.VerdictUnknown))
	h := st.Health[0]
	assert.Equal(t, "nvmlEventSetWait_v2", h.HungCall)
	assert.Contains(t, h.Reason, "nvmlEventSetWait_v2")
	assert.Equal(t, healthwatch.VerdictHealthy, st.Health[1].Verdict, "the call was about device 0")
	assert.Empty(t, st.Lost, "a hung monitor loses no device: it knows nothing")

	// Shutdown does not wait for the hung call past its ctx.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	rt.Shutdown(ctx)
	st = rt.Stats()
	assert.True(t, st.HealthWatchAbandoned, "the hung call's goroutine is accounted for")
	assert.Equal(t, healthwatch.VerdictUnknown, st.Health[0].Verdict)
	assert.Equal(t, healthwatch.VerdictUnknown, st.Health[1].Verdict, "an abandoned watch knows nothing of either")
}

func TestAMonitorCallThatReturnsLateRestoresTheVerdict(t *testing.T) {
	rt, s := openSim(t)
	rt.SetCallDeadline(50 * time.Millisecond)
	release := s.HangHealthWatch(-1, "nvmlDeviceGetFieldValues")
	waitStats(t, rt, "unknown", func(st device.Stats) bool {
		return verdictIs(0, healthwatch.VerdictUnknown)(st) && verdictIs(1, healthwatch.VerdictUnknown)(st)
	})
	release()
	st := waitStats(t, rt, "healthy again", verdictIs(1, healthwatch.VerdictHealthy))
	assert.Empty(t, st.Health[1].HungCall)
}

func TestStatsChangedClosesAtTheNextChangeOnly(t *testing.T) {
	rt, s := openSim(t)
	before := rt.Stats().Changed()
	select {
	case <-before:
		t.Fatal("closed with no change")
	default:
	}
	s.InjectXid(0, 13)
	<-before // an application's Xid is counted: a change
	assert.NotEqual(t, before, rt.Stats().Changed(), "a new channel for the next change")
}

func TestAHungMonitorCallIsTheOnlyGoroutineShutdownLeaves(t *testing.T) {
	before := runtime.NumGoroutine()
	s := sim.New(sim.WithDevices(2))
	rt := device.New(s)
	require.NoError(t, rt.Init(context.Background()))
	waitStats(t, rt, "watched", verdictIs(1, healthwatch.VerdictHealthy))
	rt.SetCallDeadline(50 * time.Millisecond)
	release := s.HangHealthWatch(1, "nvmlDeviceGetPcieReplayCounter")
	defer release()
	waitStats(t, rt, "unknown", verdictIs(1, healthwatch.VerdictUnknown))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	rt.Shutdown(ctx)
	assert.Less(t, time.Since(start), 5*time.Second, "shutdown within its ctx, not the call's")
	require.True(t, rt.Stats().HealthWatchAbandoned)
	// Poll the count from this goroutine: a helper's own goroutine would be
	// counted.
	untilLeft := func(n int, what string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine()-before > n; {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Fatalf("%s: %d goroutines left\n%s", what, runtime.NumGoroutine()-before, buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(time.Millisecond)
		}
	}
	untilLeft(1, "the watch's goroutine, stuck in the call, is all that is left")
	release()
	untilLeft(0, "once the call returns, nothing is left")
}

func TestStickyErrorsLoseTheDeviceOthersAreCounted(t *testing.T) {
	ctx := context.Background()
	s := sim.New()
	r := device.New(s)
	require.NoError(t, r.Init(ctx))
	assert.False(t, (len(r.Stats().Lost) > 0))
	assert.NoError(t, r.ReportError(0, errors.New("a timeout of the engine's own")), "not a driver error: counted")
	de, err := r.ReportDriverCode(0, "cuMemcpyHtoD_v2", 1)
	assert.NoError(t, err)
	assert.False(t, de.Sticky)
	assert.False(t, (len(r.Stats().Lost) > 0))
	assert.Equal(t, map[int]int64{0: 2}, r.Stats().ErrorCounts)
	de, err = r.ReportDriverCode(0, "cuMemcpyHtoD_v2", 0)
	assert.Nil(t, de, "code 0 is success")
	assert.NoError(t, err)
	assert.Equal(t, map[int]int64{0: 2}, r.Stats().ErrorCounts, "and records nothing")

	s.LoseDevice(1, 700)
	doErr := r.Do(ctx, 1, func() error { return nil })
	require.Error(t, doErr)
	assert.ErrorIs(t, r.ReportError(1, doErr), device.ErrDeviceLost, "700 is sticky: device 1 is lost")
	assert.ErrorIs(t, r.ReportError(1, nil), device.ErrDeviceLost, "and stays lost")
	assert.NoError(t, r.ReportError(0, nil), "device 0 is not")
	de, err = r.ReportDriverCode(0, "cuLaunchKernel", 719)
	assert.True(t, de.Sticky)
	assert.Equal(t, "CUDA_ERROR_LAUNCH_FAILED", de.Name)
	var lostErr device.LostDevice
	require.ErrorAs(t, err, &lostErr)
	assert.Equal(t, 0, lostErr.Ordinal)
	lost := r.Stats().Lost
	require.Len(t, lost, 2)
	assert.Equal(t, 0, lost[0].Ordinal)
	assert.Equal(t, 719, lost[0].Err.Code)
	assert.Equal(t, 700, lost[1].Err.Code)
	assert.ErrorIs(t, lost[1], device.ErrDeviceLost)
	assert.Contains(t, lost[1].Error(), "device 1 lost")
}

// TestReportsOfOrdinalsTheRuntimeHasNotAreRefused: on a host of two devices,
// reports for -1, 2 and 1<<30, sticky or not, raw codes or errors, are
// refused with ErrInvalidDevice, record nothing, and readiness stays 200.
func TestReportsOfOrdinalsTheRuntimeHasNotAreRefused(t *testing.T) {
	ctx := context.Background()
	rt := device.New(sim.New(sim.WithDevices(2)))
	defer rt.Shutdown(context.Background())
	require.NoError(t, rt.Init(ctx))
	h := health.New(rt, health.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer h.Close()
	ready := func() int {
		rec := httptest.NewRecorder()
		h.Ready().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code
	}
	require.Equal(t, http.StatusOK, ready())

	sticky := &device.DriverError{Backend: "sim", Op: "cuLaunchKernel", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Sticky: true}
	plain := &device.DriverError{Backend: "sim", Op: "cuLaunchKernel", Code: 1, Name: "CUDA_ERROR_INVALID_VALUE"}
	for _, ordinal := range []int{-1, 2, 1 << 30} {
		assert.ErrorIs(t, rt.ReportError(ordinal, sticky), device.ErrInvalidDevice, "ReportError(%d, sticky)", ordinal)
		assert.ErrorIs(t, rt.ReportError(ordinal, plain), device.ErrInvalidDevice, "ReportError(%d, plain)", ordinal)
		for _, code := range []int{700, 1} { // sticky, then not, in CUDA's table
			de, err := rt.ReportDriverCode(ordinal, "cuLaunchKernel", code)
			assert.ErrorIs(t, err, device.ErrInvalidDevice, "ReportDriverCode(%d, %d)", ordinal, code)
			require.NotNil(t, de)
			assert.Equal(t, code, de.Code)
		}
	}
	assert.Empty(t, rt.Stats().Lost, "nothing is lost")
	assert.Empty(t, rt.Stats().ErrorCounts, "nothing is counted")
	assert.NoError(t, rt.CheckDevice(0))
	assert.NoError(t, rt.CheckDevice(1))
	assert.Equal(t, http.StatusOK, ready(), "readiness stays on")
}
