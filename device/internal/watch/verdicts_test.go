package watch

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ev is a verdict event on device 0.
func ev(kind driver.HealthKind, action driver.HealthAction, msg string) driver.HealthEvent {
	return driver.HealthEvent{Ordinal: 0, Kind: kind, Action: action, Message: msg}
}

func TestTheDriversVerdictsSetAndClearConditionsByKind(t *testing.T) {
	type want struct {
		kinds    []driver.HealthKind // the conditions, most severe first
		lost     bool
		recovery driver.RecoveryAction
		recover  bool // Recovered is set
	}
	recovery := func(a driver.RecoveryAction, action driver.HealthAction) driver.HealthEvent {
		e := ev(driver.HealthRecovery, action, "recovery action "+a.String())
		e.Recovery = a
		return e
	}
	xid79 := driver.HealthEvent{Ordinal: 0, Kind: driver.HealthXid, Action: driver.HealthLose, Code: 79, Message: "GPU has fallen off the bus"}
	cases := []struct {
		name   string
		events []driver.HealthEvent
		want   want
	}{
		{"a pending remap degrades the device",
			[]driver.HealthEvent{ev(driver.HealthRemap, driver.HealthDegrade, "pending")},
			want{kinds: []driver.HealthKind{driver.HealthRemap}}},
		{"a failed remap loses it",
			[]driver.HealthEvent{ev(driver.HealthRemap, driver.HealthLose, "failed")},
			want{kinds: []driver.HealthKind{driver.HealthRemap}, lost: true}},
		{"a remap applied by a reset clears its condition and says recovered",
			[]driver.HealthEvent{ev(driver.HealthRemap, driver.HealthDegrade, "pending"), ev(driver.HealthRemap, driver.HealthRecover, "applied")},
			want{recover: true}},
		{"a recovery action of reset loses the device and keeps the action",
			[]driver.HealthEvent{recovery(driver.RecoveryNone, driver.HealthInform), recovery(driver.RecoveryResetGPU, driver.HealthLose)},
			want{kinds: []driver.HealthKind{driver.HealthRecovery}, lost: true, recovery: driver.RecoveryResetGPU}},
		{"a drain degrades",
			[]driver.HealthEvent{recovery(driver.RecoveryDrain, driver.HealthDegrade)},
			want{kinds: []driver.HealthKind{driver.HealthRecovery}, recovery: driver.RecoveryDrain}},
		{"the action back to none after a reset recovers, but the loss stays",
			[]driver.HealthEvent{recovery(driver.RecoveryResetGPU, driver.HealthLose), recovery(driver.RecoveryNone, driver.HealthRecover)},
			want{lost: true, recovery: driver.RecoveryNone, recover: true}},
		{"a drain that ended clears its condition but recovers no loss",
			[]driver.HealthEvent{recovery(driver.RecoveryDrain, driver.HealthDegrade), recovery(driver.RecoveryNone, driver.HealthRecover)},
			want{recovery: driver.RecoveryNone}},
		{"a fabric healthy again after an Xid 79 recovers the fabric, not the loss",
			[]driver.HealthEvent{xid79, ev(driver.HealthFabric, driver.HealthDegrade, "limited"), ev(driver.HealthFabric, driver.HealthRecover, "healthy")},
			want{lost: true}},
		{"AMD's post-reset event after its pre-reset one recovers",
			[]driver.HealthEvent{ev(driver.HealthReset, driver.HealthLose, "pre-reset"), ev(driver.HealthReset, driver.HealthRecover, "post-reset")},
			want{lost: true, recover: true}},
		{"a post-reset event alone still says the GPU was reset",
			[]driver.HealthEvent{xid79, ev(driver.HealthReset, driver.HealthRecover, "post-reset")},
			want{lost: true, recover: true}},
		{"the most severe condition comes first",
			[]driver.HealthEvent{ev(driver.HealthFabric, driver.HealthDegrade, "limited"), ev(driver.HealthRingHang, driver.HealthLose, "gfx ring")},
			want{kinds: []driver.HealthKind{driver.HealthRingHang, driver.HealthFabric}, lost: true}},
		{"an informing event of a kind clears that kind only",
			[]driver.HealthEvent{ev(driver.HealthFabric, driver.HealthDegrade, "limited"), ev(driver.HealthRemap, driver.HealthDegrade, "pending"), ev(driver.HealthFabric, driver.HealthInform, "healthy")},
			want{kinds: []driver.HealthKind{driver.HealthRemap}}},
		{"counted events set no condition",
			[]driver.HealthEvent{ev(driver.HealthVMFault, driver.HealthCount, "fault"), ev(driver.HealthThermal, driver.HealthCount, "throttle")},
			want{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := NewHealthWatch("sim", 2, func() {}, nil)
			for _, e := range c.events {
				w.apply(e)
			}
			d := w.Devices()[0]
			var kinds []driver.HealthKind
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
					w.apply(driver.HealthEvent{Ordinal: 0, Kind: driver.HealthReplay, Code: n})
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
	watching := func(src string) driver.HealthEvent {
		return driver.HealthEvent{Ordinal: 0, Kind: driver.HealthWatching, Name: src}
	}
	unwatched := func(src, why string) driver.HealthEvent {
		return driver.HealthEvent{Ordinal: 0, Kind: driver.HealthUnwatched, Name: src, Message: why}
	}
	cases := []struct {
		name    string
		events  []driver.HealthEvent
		watched bool
		why     string
	}{
		{"one source of one backend", []driver.HealthEvent{watching("")}, true, ""},
		{"events unknown, RAS read: watched, and says which is not",
			[]driver.HealthEvent{unwatched("rocm-smi", "no librocm_smi64"), watching("ras")}, true, "no librocm_smi64"},
		{"RAS reported last cannot hide the events' watch",
			[]driver.HealthEvent{watching("rocm-smi"), unwatched("ras", "no RAS counters")}, true, "no RAS counters"},
		{"neither: unknown, both reasons",
			[]driver.HealthEvent{unwatched("rocm-smi", "no librocm_smi64"), unwatched("ras", "no RAS counters")}, false, "no RAS counters; no librocm_smi64"},
		{"a source that starts watching later", []driver.HealthEvent{unwatched("rocm-smi", "init failed"), watching("rocm-smi")}, true, ""},
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
