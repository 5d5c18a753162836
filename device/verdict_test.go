package device_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
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
		case <-st.Changed:
		case <-timeout:
			t.Fatalf("never %s; health: %+v", what, st.Health)
		}
	}
}

// verdictIs is a wait condition: device ordinal's verdict is v.
func verdictIs(ordinal int, v driver.Verdict) func(device.Stats) bool {
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
		return verdictIs(0, driver.VerdictHealthy)(st) && verdictIs(1, driver.VerdictHealthy)(st)
	})
	return rt, s
}

func TestEachDevicesVerdictFollowsTheDriversOwnWord(t *testing.T) {
	recovery := func(a driver.RecoveryAction, action driver.HealthAction) driver.HealthEvent {
		return driver.HealthEvent{Ordinal: 1, Kind: driver.HealthRecovery, Action: action, Recovery: a, Message: "recovery action " + a.String()}
	}
	cases := []struct {
		name    string
		events  []driver.HealthEvent
		verdict driver.Verdict
		reason  string // in the verdict's reason
		lost    bool
	}{
		{"a recovery action of reset loses the device",
			[]driver.HealthEvent{recovery(driver.RecoveryResetGPU, driver.HealthLose)},
			driver.VerdictUnhealthy, "lost", true},
		{"a reboot, too",
			[]driver.HealthEvent{recovery(driver.RecoveryRebootNode, driver.HealthLose)},
			driver.VerdictUnhealthy, "lost", true},
		{"a drain degrades it",
			[]driver.HealthEvent{recovery(driver.RecoveryDrain, driver.HealthDegrade)},
			driver.VerdictDegraded, "recovery action drain", false},
		{"a pending remap degrades it",
			[]driver.HealthEvent{{Ordinal: 1, Kind: driver.HealthRemap, Action: driver.HealthDegrade, Message: "a row remap is pending"}},
			driver.VerdictDegraded, "row-remap: a row remap is pending", false},
		{"a pending remap that a reset applied is healthy again",
			[]driver.HealthEvent{
				{Ordinal: 1, Kind: driver.HealthRemap, Action: driver.HealthDegrade, Message: "pending"},
				{Ordinal: 1, Kind: driver.HealthRemap, Action: driver.HealthRecover, Message: "applied"}},
			driver.VerdictHealthy, "", false},
		{"a ring hang loses it",
			[]driver.HealthEvent{{Ordinal: 1, Kind: driver.HealthRingHang, Action: driver.HealthLose, Message: "the gfx ring hung"}},
			driver.VerdictUnhealthy, "gfx ring hung", true},
		{"a reset after the loss says when a new process may use it",
			[]driver.HealthEvent{recovery(driver.RecoveryResetGPU, driver.HealthLose), recovery(driver.RecoveryNone, driver.HealthRecover)},
			driver.VerdictUnhealthy, "a new process may use it", true},
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
				return h.Verdict == c.verdict && (last.Action != driver.HealthRecover || !h.Recovered.IsZero())
			})
			h := st.Health[1]
			assert.Contains(t, h.Reason, c.reason)
			assert.False(t, h.Since.IsZero(), "since when")
			assert.Equal(t, c.lost, len(st.Lost) == 1, "lost")
			assert.Equal(t, driver.VerdictHealthy, st.Health[0].Verdict, "the other device is healthy")
			if last.Kind == driver.HealthRecovery {
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
	fabric := func(action driver.HealthAction, words string) driver.HealthEvent {
		return driver.HealthEvent{Ordinal: 1, Kind: driver.HealthFabric, Action: action, Message: "the GPU's fabric: " + words,
			Fabric: &driver.FabricState{State: 3, Words: words}}
	}
	recovery := func(a driver.RecoveryAction, action driver.HealthAction) driver.HealthEvent {
		return driver.HealthEvent{Ordinal: 1, Kind: driver.HealthRecovery, Action: action, Recovery: a, Message: "recovery action " + a.String()}
	}
	fabricIs := func(words string) func(device.DeviceHealth) bool {
		return func(h device.DeviceHealth) bool { return h.Fabric != nil && h.Fabric.Words == words }
	}
	cases := []struct {
		name    string
		events  []driver.HealthEvent
		applied func(device.DeviceHealth) bool
		usable  bool
	}{
		{"a fabric healthy again does not recover the loss",
			[]driver.HealthEvent{fabric(driver.HealthDegrade, "limited"), fabric(driver.HealthRecover, "healthy")},
			fabricIs("healthy"), false},
		{"nor does a benign fabric change after that",
			[]driver.HealthEvent{fabric(driver.HealthLose, "unhealthy"), fabric(driver.HealthRecover, "healthy"), fabric(driver.HealthInform, "healthy, again")},
			fabricIs("healthy, again"), false},
		{"nor a drain that ended",
			[]driver.HealthEvent{recovery(driver.RecoveryDrain, driver.HealthDegrade), recovery(driver.RecoveryNone, driver.HealthRecover)},
			func(h device.DeviceHealth) bool { return h.Recovery == driver.RecoveryNone }, false},
		{"the recovery action back to none after a reset does",
			[]driver.HealthEvent{recovery(driver.RecoveryResetGPU, driver.HealthLose), recovery(driver.RecoveryNone, driver.HealthRecover)},
			func(h device.DeviceHealth) bool { return h.Recovery == driver.RecoveryNone }, true},
		{"so does AMD's post-reset event",
			[]driver.HealthEvent{{Ordinal: 1, Kind: driver.HealthReset, Action: driver.HealthRecover, Message: "post-reset"}},
			func(h device.DeviceHealth) bool { return !h.Recovered.IsZero() }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt, s := openSim(t)
			s.InjectXid(1, 79)
			waitStats(t, rt, "lost", verdictIs(1, driver.VerdictUnhealthy))
			for _, ev := range c.events {
				s.InjectHealthEvent(ev)
			}
			st := waitStats(t, rt, "the last event applied", func(st device.Stats) bool { return c.applied(st.Health[1]) })
			h := st.Health[1]
			assert.Equal(t, driver.VerdictUnhealthy, h.Verdict, "lost for the rest of the process")
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
	st := waitStats(t, rt, "unknown", verdictIs(0, driver.VerdictUnknown))
	h := st.Health[0]
	assert.Equal(t, "nvmlEventSetWait_v2", h.HungCall)
	assert.Contains(t, h.Reason, "nvmlEventSetWait_v2")
	assert.Equal(t, driver.VerdictHealthy, st.Health[1].Verdict, "the call was about device 0")
	assert.Empty(t, st.Lost, "a hung monitor loses no device: it knows nothing")

	// Shutdown does not wait for the hung call past its ctx.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	rt.Shutdown(ctx)
	st = rt.Stats()
	assert.True(t, st.HealthWatchAbandoned, "the hung call's goroutine is accounted for")
	assert.Equal(t, driver.VerdictUnknown, st.Health[0].Verdict)
	assert.Equal(t, driver.VerdictUnknown, st.Health[1].Verdict, "an abandoned watch knows nothing of either")
}

func TestAMonitorCallThatReturnsLateRestoresTheVerdict(t *testing.T) {
	rt, s := openSim(t)
	rt.SetCallDeadline(50 * time.Millisecond)
	release := s.HangHealthWatch(-1, "nvmlDeviceGetFieldValues")
	waitStats(t, rt, "unknown", func(st device.Stats) bool {
		return verdictIs(0, driver.VerdictUnknown)(st) && verdictIs(1, driver.VerdictUnknown)(st)
	})
	release()
	st := waitStats(t, rt, "healthy again", verdictIs(1, driver.VerdictHealthy))
	assert.Empty(t, st.Health[1].HungCall)
}

func TestStatsChangedClosesAtTheNextChangeOnly(t *testing.T) {
	rt, s := openSim(t)
	before := rt.Stats().Changed
	select {
	case <-before:
		t.Fatal("closed with no change")
	default:
	}
	s.InjectXid(0, 13)
	<-before // an application's Xid is counted: a change
	assert.NotEqual(t, before, rt.Stats().Changed, "a new channel for the next change")
}

func TestAHungMonitorCallIsTheOnlyGoroutineShutdownLeaves(t *testing.T) {
	before := runtime.NumGoroutine()
	s := sim.New(sim.WithDevices(2))
	rt := device.New(s)
	require.NoError(t, rt.Init(context.Background()))
	waitStats(t, rt, "watched", verdictIs(1, driver.VerdictHealthy))
	rt.SetCallDeadline(50 * time.Millisecond)
	release := s.HangHealthWatch(1, "nvmlDeviceGetPcieReplayCounter")
	defer release()
	waitStats(t, rt, "unknown", verdictIs(1, driver.VerdictUnknown))
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
