//go:build linux && cgo && !nocuda

package cuda

import (
	"fmt"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNVMLFabric: the watch reports the GPU fabric's state where it has one.
func TestNVMLFabric(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
	runVerdictChildren(t, []verdictCase{
		{"v3's health summary decides, and each change is reported", "TestChildFabric", false,
			[]string{"GPUINIT_FAKE_NVML_FABRIC=3 0 1 0"}},
		{"a driver that knows only v2 is read as v2", "TestChildFabricV2", false,
			[]string{"GPUINIT_FAKE_NVML_FABRIC=3 0 2 1", "GPUINIT_FAKE_NVML_FABRIC_V2=1"}},
		{"without a fabric, no fabric state is reported", "TestChildNoFabric", false, nil},
	})
}

func TestChildFabric(t *testing.T) {
	child(t)
	rec, uuids := watchDirectly(t, afterEachWait, false)
	ev := rec.nth(t, 1, 0, healthwatch.KindFabric)
	assert.Equal(t, healthwatch.Inform, ev.Action)
	require.NotNil(t, ev.Fabric)
	assert.Equal(t, healthwatch.FabricState{State: 3, Summary: 1, Clique: 7, Words: "registration completed, healthy"}, *ev.Fabric)
	for i, c := range []struct {
		state, status, summary, mask string
		action                       healthwatch.Action
		words                        string
	}{
		{"3", "0", "3", "1", healthwatch.Degrade, "registration completed, limited capacity (bandwidth degraded)"},
		{"3", "0", "1", "0", healthwatch.Recover, "registration completed, healthy"},
		{"3", "0", "2", "16", healthwatch.Lose, "registration completed, unhealthy (route unhealthy)"},
		{"3", "0", "1", "0", healthwatch.Recover, "registration completed, healthy"},
		// A benign change after a recovery (the bandwidth field read as
		// "false", 2) informs: it recovers nothing.
		{"3", "0", "1", "2", healthwatch.Inform, "registration completed, healthy"},
		{"3", "999", "0", "0", healthwatch.Lose, "registration completed with a failure (status 999 NVML_ERROR_UNKNOWN)"},
		{"2", "0", "0", "0", healthwatch.Recover, "registration in progress"},
	} {
		inject(t, "fabric", uuids[0], c.state, c.status, c.summary, c.mask)
		ev := rec.nth(t, i+2, 0, healthwatch.KindFabric)
		assert.Equal(t, c.action, ev.Action, "%+v", c)
		require.NotNil(t, ev.Fabric)
		assert.Equal(t, c.words, ev.Fabric.Words)
		assert.Equal(t, c.status, fmt.Sprint(ev.Code))
	}
	for _, c := range []struct{ state, replays, why string }{
		{"2", "77", "an unchanged state is not reported again"},
		{"0", "78", "a state of 'not supported' is not reported"},
	} {
		inject(t, "fabric", uuids[0], c.state, "0", "0", "0")
		readAfter(t, rec, 0, c.replays)
		assert.Len(t, rec.of(0, healthwatch.KindFabric), 8, c.why)
	}
}

func TestChildFabricV2(t *testing.T) {
	child(t)
	rec, _ := watchDirectly(t, afterEachWait, false)
	ev := rec.nth(t, 1, 1, healthwatch.KindFabric)
	require.NotNil(t, ev.Fabric)
	assert.Equal(t, 0, ev.Fabric.Summary, "v2 has no health summary: the fake's unhealthy one is not read")
	assert.Equal(t, uint32(1), ev.Fabric.Health)
	assert.Equal(t, healthwatch.Inform, ev.Action)
	assert.Equal(t, "registration completed (bandwidth degraded)", ev.Fabric.Words)
}

// TestChildNoFabric: a GPU that answers NVML_ERROR_NOT_SUPPORTED (the fake's
// default) reports no fabric state, though the counters are read.
func TestChildNoFabric(t *testing.T) {
	child(t)
	rec, _ := watchDirectly(t, afterEachWait, false)
	rec.nth(t, 3, 1, healthwatch.KindCounters)
	assert.Empty(t, rec.of(0, healthwatch.KindFabric))
	assert.Empty(t, rec.of(1, healthwatch.KindFabric))
	assert.GreaterOrEqual(t, rec.count("nvmlDeviceGetGpuFabricInfoV"), 3, "it was asked")
}

// readAfter waits until a whole counters read of device ordinal has run
// after the lines appended so far: it sets the replay counter to the
// unique value n, and waits for the second read that reports it.
func readAfter(t *testing.T, rec *recorder, ordinal int, n string) {
	t.Helper()
	inject(t, "replays", rec.uuids[ordinal], n)
	rec.until(t, "two reads that see "+n+" replays", func() bool {
		seen := 0
		for _, ev := range rec.of(ordinal, healthwatch.KindReplay) {
			if fmt.Sprint(ev.Code) == n {
				seen++
			}
		}
		return seen >= 2
	})
}
