package watch

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ev is a verdict event on device 0.
func ev(kind healthwatch.Kind, action healthwatch.Action, msg string) healthwatch.Event {
	return healthwatch.Event{Ordinal: 0, Kind: kind, Action: action, Message: msg}
}

func TestTheDriversVerdictsSetAndClearConditionsByKind(t *testing.T) {
	type want struct {
		kinds    []healthwatch.Kind // the conditions, most severe first
		lost     bool
		recovery healthwatch.RecoveryAction
		recover  bool // Recovered is set
	}
	recovery := func(a healthwatch.RecoveryAction, action healthwatch.Action) healthwatch.Event {
		e := ev(healthwatch.KindRecovery, action, "recovery action "+a.String())
		e.Recovery = a
		return e
	}
	xid79 := healthwatch.Event{Ordinal: 0, Kind: healthwatch.KindXid, Action: healthwatch.Lose, Code: 79, Message: "GPU has fallen off the bus"}
	cases := []struct {
		name   string
		events []healthwatch.Event
		want   want
	}{
		{"a pending remap degrades the device",
			[]healthwatch.Event{ev(healthwatch.KindRemap, healthwatch.Degrade, "pending")},
			want{kinds: []healthwatch.Kind{healthwatch.KindRemap}}},
		{"a failed remap loses it",
			[]healthwatch.Event{ev(healthwatch.KindRemap, healthwatch.Lose, "failed")},
			want{kinds: []healthwatch.Kind{healthwatch.KindRemap}, lost: true}},
		{"a remap applied by a reset clears its condition and says recovered",
			[]healthwatch.Event{ev(healthwatch.KindRemap, healthwatch.Degrade, "pending"), ev(healthwatch.KindRemap, healthwatch.Recover, "applied")},
			want{recover: true}},
		{"a recovery action of reset loses the device and keeps the action",
			[]healthwatch.Event{recovery(healthwatch.RecoveryNone, healthwatch.Inform), recovery(healthwatch.RecoveryResetGPU, healthwatch.Lose)},
			want{kinds: []healthwatch.Kind{healthwatch.KindRecovery}, lost: true, recovery: healthwatch.RecoveryResetGPU}},
		{"a drain degrades",
			[]healthwatch.Event{recovery(healthwatch.RecoveryDrain, healthwatch.Degrade)},
			want{kinds: []healthwatch.Kind{healthwatch.KindRecovery}, recovery: healthwatch.RecoveryDrain}},
		{"the action back to none after a reset recovers, but the loss stays",
			[]healthwatch.Event{recovery(healthwatch.RecoveryResetGPU, healthwatch.Lose), recovery(healthwatch.RecoveryNone, healthwatch.Recover)},
			want{lost: true, recovery: healthwatch.RecoveryNone, recover: true}},
		{"a drain that ended clears its condition but recovers no loss",
			[]healthwatch.Event{recovery(healthwatch.RecoveryDrain, healthwatch.Degrade), recovery(healthwatch.RecoveryNone, healthwatch.Recover)},
			want{recovery: healthwatch.RecoveryNone}},
		{"a fabric healthy again after an Xid 79 recovers the fabric, not the loss",
			[]healthwatch.Event{xid79, ev(healthwatch.KindFabric, healthwatch.Degrade, "limited"), ev(healthwatch.KindFabric, healthwatch.Recover, "healthy")},
			want{lost: true}},
		{"AMD's post-reset event after its pre-reset one recovers",
			[]healthwatch.Event{ev(healthwatch.KindReset, healthwatch.Lose, "pre-reset"), ev(healthwatch.KindReset, healthwatch.Recover, "post-reset")},
			want{lost: true, recover: true}},
		{"a post-reset event alone still says the GPU was reset",
			[]healthwatch.Event{xid79, ev(healthwatch.KindReset, healthwatch.Recover, "post-reset")},
			want{lost: true, recover: true}},
		{"the most severe condition comes first",
			[]healthwatch.Event{ev(healthwatch.KindFabric, healthwatch.Degrade, "limited"), ev(healthwatch.KindRingHang, healthwatch.Lose, "gfx ring")},
			want{kinds: []healthwatch.Kind{healthwatch.KindRingHang, healthwatch.KindFabric}, lost: true}},
		{"an informing event of a kind clears that kind only",
			[]healthwatch.Event{ev(healthwatch.KindFabric, healthwatch.Degrade, "limited"), ev(healthwatch.KindRemap, healthwatch.Degrade, "pending"), ev(healthwatch.KindFabric, healthwatch.Inform, "healthy")},
			want{kinds: []healthwatch.Kind{healthwatch.KindRemap}}},
		{"counted events set no condition",
			[]healthwatch.Event{ev(healthwatch.KindVMFault, healthwatch.Count, "fault"), ev(healthwatch.KindThermal, healthwatch.Count, "throttle")},
			want{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := NewHealthWatch("sim", 2, func() {}, nil)
			for _, e := range c.events {
				w.apply(e)
			}
			d := w.Devices()[0]
			var kinds []healthwatch.Kind
			for _, cond := range d.Conditions {
				kinds = append(kinds, cond.Kind)
			}
			assert.Equal(t, c.want.kinds, kinds)
			_, lost := w.Find(0)
			assert.Equal(t, c.want.lost, lost, "lost")
			assert.Equal(t, c.want.recovery, d.Recovery)
			assert.Equal(t, c.want.recover, !d.Recovered.IsZero(), "recovered")
			other := w.Devices()[1]
			assert.Empty(t, other.Conditions, "the other device is untouched")
			_, otherLost := w.Find(1)
			assert.False(t, otherLost)
		})
	}
}

func TestTheReplayRateDegradesAboveEightAMinuteAndClearsBelow(t *testing.T) {
	// Reads every 30 s, as the NVML watch reads its counters.
	cases := []struct {
		name     string
		counts   []int // the counter at each read
		degraded bool
		rate     float64
	}{
		{"a quiet link", []int{100, 102, 104, 106}, false, 4},
		{"a storm: 10 a minute", []int{0, 5, 10, 15}, true, 10},
		{"exactly 8 a minute is not a storm", []int{0, 4, 8, 12}, false, 8},
		{"a storm that ended", []int{0, 50, 100, 100, 100, 100}, false, 0},
		{"a counter that went back (the driver reloaded) starts again", []int{1000, 1, 2}, false, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := NewHealthWatch("sim", 1, func() {}, nil)
				for i, n := range c.counts {
					if i > 0 {
						time.Sleep(30 * time.Second)
					}
					w.apply(healthwatch.Event{Ordinal: 0, Kind: healthwatch.KindReplay, Code: n})
				}
				d := w.Devices()[0]
				assert.InDelta(t, c.rate, d.ReplaysPerMinute, 0.01)
				if c.degraded {
					require.Len(t, d.Conditions, 1)
					assert.Equal(t, Degraded, d.Conditions[0].Level)
					assert.Contains(t, d.Conditions[0].Message, "PCIe replays a minute")
				} else {
					assert.Empty(t, d.Conditions)
				}
				_, lost := w.Find(0)
				assert.False(t, lost, "a replay storm never loses the device")
			})
		})
	}
}

func TestADeviceIsWatchedWhileAnyOfItsSourcesWatchesIt(t *testing.T) {
	watching := func(src string) healthwatch.Event {
		return healthwatch.Event{Ordinal: 0, Kind: healthwatch.KindWatching, Name: src}
	}
	unwatched := func(src, why string) healthwatch.Event {
		return healthwatch.Event{Ordinal: 0, Kind: healthwatch.KindUnwatched, Name: src, Message: why}
	}
	cases := []struct {
		name    string
		events  []healthwatch.Event
		watched bool
		why     string
	}{
		{"one source of one backend", []healthwatch.Event{watching("")}, true, ""},
		{"events unknown, RAS read: watched, and says which is not",
			[]healthwatch.Event{unwatched("rocm-smi", "no librocm_smi64"), watching("ras")}, true, "no librocm_smi64"},
		{"RAS reported last cannot hide the events' watch",
			[]healthwatch.Event{watching("rocm-smi"), unwatched("ras", "no RAS counters")}, true, "no RAS counters"},
		{"neither: unknown, both reasons",
			[]healthwatch.Event{unwatched("rocm-smi", "no librocm_smi64"), unwatched("ras", "no RAS counters")}, false, "no RAS counters; no librocm_smi64"},
		{"a source that starts watching later", []healthwatch.Event{unwatched("rocm-smi", "init failed"), watching("rocm-smi")}, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := NewHealthWatch("hip", 1, func() {}, nil)
			for _, e := range c.events {
				w.apply(e)
			}
			d := w.Devices()[0]
			assert.Equal(t, c.watched, d.Watched)
			assert.Equal(t, c.why, d.Why)
		})
	}
}
