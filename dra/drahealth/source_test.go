package drahealth_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/dra/drahealth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// fakeSource is a Source whose states the test sets. set with notify closes
// Changed, as a live watch does at a change; without it the change is
// silent, as a watch that is stuck says nothing: the Feed sees it only when
// it reads the Source again.
type fakeSource struct {
	mu      sync.Mutex // protects following fields
	states  []drahealth.State
	changed chan struct{}
}

func newFakeSource(states ...drahealth.State) *fakeSource {
	return &fakeSource{states: states, changed: make(chan struct{})}
}

func (s *fakeSource) Health() drahealth.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return drahealth.Snapshot{Devices: append([]drahealth.State(nil), s.states...), Changed: s.changed}
}

// set replaces the state of st's device; notify closes Changed.
func (s *fakeSource) set(st drahealth.State, notify bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.states {
		if s.states[i].Ordinal == st.Ordinal {
			s.states[i] = st
		}
	}
	if notify {
		close(s.changed)
		s.changed = make(chan struct{})
	}
}

func healthy(ordinal int) drahealth.State {
	return drahealth.State{Ordinal: ordinal, Verdict: healthwatch.VerdictHealthy}
}

// simRuntime is a Runtime over n simulated devices, initialized, with every
// device watched (waited for on Stats.Changed), and its devices.
func simRuntime(t testing.TB, n int) (*sim.Backend, *device.Runtime, []device.Info) {
	t.Helper()
	b := sim.New(sim.WithDevices(n))
	rt := device.New(b)
	t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	devices, err := rt.Devices(ctx)
	require.NoError(t, err)
	waitStats(t, rt, func(s device.Stats) bool {
		if len(s.Health) != n {
			return false
		}
		for _, h := range s.Health {
			if h.Verdict != healthwatch.VerdictHealthy {
				return false
			}
		}
		return true
	})
	return b, rt, devices
}

// waitStats waits on Stats.Changed until cond holds, for 10 s at most.
func waitStats(t testing.TB, rt *device.Runtime, cond func(device.Stats) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for s := rt.Stats(); !cond(s); s = rt.Stats() {
		select {
		case <-s.Changed():
		case <-deadline:
			t.Fatalf("the Runtime's state never got there: %+v", s.Health)
		}
	}
}

// TestFromRuntimeTellsVerdictsAndStaleness: the Runtime's verdicts come
// through with their reasons, and a Runtime shut down vouches for none.
func TestFromRuntimeTellsVerdictsAndStaleness(t *testing.T) {
	b, rt, _ := simRuntime(t, 2)
	src := drahealth.FromRuntime(rt)
	snap := src.Health()
	require.Len(t, snap.Devices, 2)
	for i, s := range snap.Devices {
		assert.Equal(t, drahealth.State{Ordinal: i, Verdict: healthwatch.VerdictHealthy}, s)
	}

	b.InjectXid(1, 79)
	select {
	case <-snap.Changed:
	case <-time.After(10 * time.Second):
		t.Fatal("Changed was never closed after an Xid 79")
	}
	waitStats(t, rt, func(s device.Stats) bool { return s.Health[1].Verdict == healthwatch.VerdictUnhealthy })
	lost := src.Health().Devices[1]
	assert.Equal(t, healthwatch.VerdictUnhealthy, lost.Verdict)
	assert.Contains(t, lost.Reason, "FALLEN_OFF_THE_BUS")
	assert.Empty(t, lost.Stale)

	require.NoError(t, rt.Shutdown(context.Background()))
	for _, s := range src.Health().Devices {
		assert.Equal(t, "gpuinit's Runtime is shut down", s.Stale, "device %d", s.Ordinal)
	}
}

// TestTheKubeletHearsALostGPUUsableOnlyAfterAReset: the message of a GPU
// lost to an Xid 79 says a new process may use it only after the driver said
// it was reset, not after its NVLink fabric reported healthy again.
func TestTheKubeletHearsALostGPUUsableOnlyAfterAReset(t *testing.T) {
	fabric := func(action healthwatch.Action, words string) healthwatch.Event {
		return healthwatch.Event{Ordinal: 1, Kind: healthwatch.KindFabric, Action: action, Message: words,
			Fabric: &healthwatch.FabricState{State: 3, Words: words}}
	}
	reset := func(action healthwatch.Action, a healthwatch.RecoveryAction) healthwatch.Event {
		return healthwatch.Event{Ordinal: 1, Kind: healthwatch.KindRecovery, Action: action, Recovery: a}
	}
	for _, tc := range []struct {
		name    string
		events  []healthwatch.Event
		applied func(device.DeviceHealth) bool
		usable  bool
	}{
		{"the fabric healthy again", []healthwatch.Event{fabric(healthwatch.Degrade, "limited"), fabric(healthwatch.Recover, "healthy")},
			func(h device.DeviceHealth) bool { return h.Fabric != nil && h.Fabric.Words == "healthy" }, false},
		{"the recovery action back to none after a reset",
			[]healthwatch.Event{reset(healthwatch.Lose, healthwatch.RecoveryResetGPU), reset(healthwatch.Recover, healthwatch.RecoveryNone)},
			func(h device.DeviceHealth) bool { return h.Recovery == healthwatch.RecoveryNone }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, rt, devices := simRuntime(t, 2)
			f, err := drahealth.NewFeed(drahealth.FromRuntime(rt), devices, drahealth.Options{Pool: "node-a"})
			require.NoError(t, err)
			b.InjectXid(1, 79)
			for _, ev := range tc.events {
				b.InjectHealthEvent(ev)
			}
			waitStats(t, rt, func(s device.Stats) bool { return tc.applied(s.Health[1]) })
			d := f.Report().Devices[1]
			assert.Equal(t, kubeletplugin.HealthStatusUnhealthy, d.Health)
			assert.Contains(t, d.Message, "unhealthy: lost: ")
			assert.Equal(t, tc.usable, strings.Contains(d.Message, "a new process may use it"), "message: %s", d.Message)
		})
	}
}
