//go:build linux && cgo && !nocuda

package cuda

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHealthWatchStops: what the watch does when NVML misbehaves after init.
func TestHealthWatchStops(t *testing.T) {
	env, _ := fake(t, fakedriver.CUDA)
	env = slices.Clip(env) // the parallel subtests append to it
	nvml := fakedriver.Build(t, fakedriver.NVML)
	withEvents := func(t *testing.T, extra ...string) []string {
		events := filepath.Join(t.TempDir(), "events")
		require.NoError(t, os.WriteFile(events, nil, 0o644))
		log := fakedriver.NewCallLog(t)
		return append(append(env, EnvNVMLLibrary+"="+nvml, envEvents+"="+events,
			"GPUINIT_FAKE_NVML_LOG="+string(log), "NVML_LOG="+string(log)), extra...)
	}
	t.Run("Close returns within its grace though NVML's wait never returns", func(t *testing.T) {
		t.Parallel() // each child has its own fakes' files, and mostly waits
		runChild(t, "TestChildCloseAbandonsAHungWatch", withEvents(t, "HANG=wait", "HUNG=nvmlEventSetWait_v2 hang")...)
	})
	t.Run("Close returns within its grace though the counters read never returns", func(t *testing.T) {
		t.Parallel() // each child has its own fakes' files, and mostly waits
		runChild(t, "TestChildCloseAbandonsAHungWatch", withEvents(t, "GPUINIT_FAKE_NVML_COUNTERS_HANG=1",
			"HUNG=nvmlDeviceGetPersistenceMode hang")...)
	})
	t.Run("the backoff starts again at 1 s once a wait has succeeded", func(t *testing.T) {
		t.Parallel() // each child has its own fakes' files, and mostly waits
		runChild(t, "TestChildWatchBackoffResets", withEvents(t)...)
	})
}

// appendEvents appends lines to the fake NVML's events file.
func appendEvents(t *testing.T, lines string) {
	t.Helper()
	f, err := os.OpenFile(os.Getenv(envEvents), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString(lines)
	require.NoError(t, err)
}

// TestChildCloseAbandonsAHungWatch: with the watch stuck in an NVML call
// that never returns (HUNG names the fake's log line for it), Shutdown
// returns by its ctx (2 s) plus a margin, and says the watch was
// abandoned. It does not use watchedRuntime, whose cleanup would Close
// again: a Close that waited for ever would hang the child past its failure.
func TestChildCloseAbandonsAHungWatch(t *testing.T) {
	child(t)
	r := device.New(process)
	_, err := r.Devices(context.Background())
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		h := r.Stats().Health
		return len(h) == 2 && h[0].Watched && h[1].Watched
	}, 10*time.Second, time.Millisecond, "both devices are watched")
	if os.Getenv("HANG") == "wait" {
		appendEvents(t, "hang\n")
	}
	log := fakedriver.CallLog(os.Getenv("NVML_LOG"))
	hung := os.Getenv("HUNG")
	require.Eventually(t, func() bool { return len(log.Lines(t, hung)) == 1 }, 40*time.Second, time.Millisecond,
		"the watch is stuck in NVML (%s)", hung)

	closed := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		assert.ErrorContains(t, r.Shutdown(ctx), "abandoning the health watch")
		closed <- time.Since(start)
	}()
	bound := 2*time.Second + time.Second
	select {
	case took := <-closed:
		assert.Less(t, took, bound)
		t.Logf("Shutdown took %v", took)
	case <-time.After(bound):
		t.Fatalf("Shutdown has not returned in %v: it waits for the NVML call", bound)
	}
	assert.True(t, r.Stats().HealthWatchAbandoned)
	for _, h := range r.Stats().Health {
		assert.False(t, h.Watched)
		assert.Contains(t, h.Why, "abandoned")
	}
	assert.Empty(t, r.Stats().Lost, "an abandoned watch loses nothing")
}

// TestChildWatchBackoffResets: two failed waits in a row back off 1 s, then
// 2 s; once a wait has succeeded (an event), the next failure backs off 1 s
// again.
func TestChildWatchBackoffResets(t *testing.T) {
	child(t)
	r, inject := watchedRuntime(t)
	// failure waits for the nth failure and returns its message, which the
	// next successful registration clears.
	failure := func(n int64) string {
		var msg string
		require.Eventually(t, func() bool {
			h := r.Stats().Health[0]
			msg = h.WatchError
			return h.WatchErrors == n && msg != ""
		}, 20*time.Second, time.Millisecond, "failure %d", n)
		return msg
	}
	appendEvents(t, "error 999\nerror 999\n")
	assert.Contains(t, failure(1), "watching again in 1s")
	assert.Contains(t, failure(2), "watching again in 2s", "failed again before any wait succeeded")
	inject("xid", 1, "13")
	require.Eventually(t, func() bool { return r.Stats().Health[1].Counted["xid 13"] == 1 }, 20*time.Second, time.Millisecond,
		"a wait succeeds")
	appendEvents(t, "error 999\n")
	got := failure(3)
	assert.Contains(t, got, "watching again in 1s", "the backoff starts again once a wait has succeeded")
	assert.False(t, strings.Contains(got, "in 4s"))
	assert.Empty(t, r.Stats().Lost)
}

// TestNVMLCallsTracked: a watch's NVML call that hangs is bracketed by
// TrackCall: its Begin, on the device it is about (or -1), has no end, and
// every other call's has.
func TestNVMLCallsTracked(t *testing.T) {
	var cases []verdictCase
	for _, c := range []struct {
		call   string
		device bool // about one device, not the whole watch
		by     string
	}{
		{"nvmlInit_v2", false, "env"},
		{"nvmlEventSetCreate", false, "env"},
		{"nvmlDeviceGetHandleByUUID", true, "env"},
		{"nvmlDeviceGetSupportedEventTypes", true, "env"},
		{"nvmlDeviceRegisterEvents", true, "env"},
		{"nvmlEventSetWait_v2", false, "line"},
		{"nvmlDeviceGetPersistenceMode", true, "line"},
		{"nvmlDeviceGetRemappedRows", true, "line"},
		{"nvmlDeviceGetFieldValues", true, "line"},
		{"nvmlDeviceGetPcieReplayCounter", true, "line"},
		{"nvmlDeviceGetGpuFabricInfoV", true, "line"},
	} {
		env := []string{"HUNG=" + c.call, fmt.Sprintf("HUNG_DEVICE=%t", c.device), "HANG_BY=" + c.by}
		if c.by == "env" {
			env = append(env, "GPUINIT_FAKE_NVML_HANG_CALL="+c.call)
		}
		cases = append(cases, verdictCase{c.call, "TestChildHungCallTracked", false, env})
	}
	runVerdictChildren(t, cases)
}

// TestChildHungCallTracked: the call HUNG hangs (set by the environment,
// or by the events file once the watch waits); the watch's Begin of it has
// no end, on a device (HUNG_DEVICE) or -1, and every other Begin has one.
func TestChildHungCallTracked(t *testing.T) {
	child(t)
	rec, _ := watchDirectly(t, true, true)
	hung := os.Getenv("HUNG")
	if os.Getenv("HANG_BY") == "line" {
		rec.nth(t, 1, 0, driver.HealthRead)
		if hung == "nvmlEventSetWait_v2" {
			appendEvents(t, "hang\n")
		} else {
			appendEvents(t, "hang-call "+hung+"\n")
		}
	}
	log := fakedriver.CallLog(os.Getenv("NVML_LOG"))
	require.Eventually(t, func() bool { return len(log.Lines(t, hung+" hang")) == 1 }, 20*time.Second, time.Millisecond,
		"the watch is stuck in %s", hung)
	open := rec.open()
	require.Len(t, open, 1, "the hung call alone has not ended: %+v", open)
	assert.Equal(t, hung, open[0].op)
	if os.Getenv("HUNG_DEVICE") == "true" {
		assert.Contains(t, []int{0, 1}, open[0].ordinal, "a call about one device names it")
	} else {
		assert.Equal(t, -1, open[0].ordinal, "a call about no one device")
	}
}
