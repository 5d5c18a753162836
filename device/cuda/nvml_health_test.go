//go:build linux && cgo && !nocuda

package cuda

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/internal/childtest"
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

// TestVerdictsThroughARuntime: over the fake NVML, each of the driver's own
// signals on device 1 reaches its verdict, readiness and status, within
// 100 ms of an event or one counters read of a polled state, and where the
// driver clears it, clears; device 0 stays healthy. A hung counters read
// hangs on device 0, read first, whose health turns unknown, naming it.
func TestVerdictsThroughARuntime(t *testing.T) {
	env, _ := fake(t, fakedriver.CUDA)
	env = slices.Clip(env)
	nvml := fakedriver.Build(t, fakedriver.NVML)
	for _, c := range []struct {
		name, lines, verdict, ready, clear string
		polled                             bool
	}{
		{name: "a recovery action of reset loses the device", lines: "recovery %s 1", verdict: "unhealthy", ready: "no"},
		{name: "a reboot too", lines: "recovery %s 2", verdict: "unhealthy", ready: "no"},
		{name: "a drain degrades it", lines: "recovery %s 3", verdict: "degraded", ready: "yes", clear: "recovery %s 0"},
		{name: "the GPU unavailable loses it", lines: "unavailable %s", verdict: "unhealthy", ready: "no"},
		{name: "a pending remap degrades it until a reset applies it", lines: "remap-pending %s 1", verdict: "degraded", ready: "yes",
			clear: "remap-pending %s 0", polled: true},
		{name: "a failed remap loses it", lines: "remap-failed %s 1", verdict: "unhealthy", ready: "no", polled: true},
		{name: "a fabric at limited capacity degrades it", lines: "fabric %s 3 0 3", verdict: "degraded", ready: "yes",
			clear: "fabric %s 3 0 1", polled: true},
		{name: "a fabric that failed to register loses it", lines: "fabric %s 3 999 1", verdict: "unhealthy", ready: "no", polled: true},
		{name: "a PCIe replay storm degrades it", lines: "replays %s 1000", verdict: "degraded", ready: "yes", polled: true},
		{name: "a hung counters read makes the health unknown, naming the call", lines: "hang-call nvmlDeviceGetPcieReplayCounter",
			verdict: "unknown", ready: "yes", polled: true},
		{name: "a hung event wait too", lines: "hang-call nvmlEventSetWait_v2", verdict: "unknown", ready: "yes", polled: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each child has its own fakes' files, and mostly waits in NVML
			events := filepath.Join(t.TempDir(), "events")
			require.NoError(t, os.WriteFile(events, nil, 0o644))
			out := runChild(t, "TestChildVerdict", append(env, EnvNVMLLibrary+"="+nvml, envEvents+"="+events,
				"GPUINIT_FAKE_NVML_FABRIC=3 0 1 0", "CASE_LINES="+c.lines, "CASE_VERDICT="+c.verdict, "CASE_READY="+c.ready,
				"CASE_CLEAR="+c.clear, fmt.Sprintf("CASE_POLLED=%v", c.polled))...)
			if i := strings.Index(out, "from the signal to the verdict:"); i >= 0 {
				t.Log(strings.SplitN(out[i:], "\n", 2)[0])
			}
		})
	}
}

func TestChildVerdict(t *testing.T) {
	child(t)
	countersEvery = 20 * time.Millisecond // after each wait
	r, _ := watchedRuntime(t)
	want := os.Getenv("CASE_VERDICT")
	if want == "unknown" {
		// The monitor's calls are held to it. Only where a call hangs: a
		// wait a loaded machine stretches past so short a deadline is
		// taken as hung too, and Shutdown then abandons the watch.
		r.SetCallDeadline(200 * time.Millisecond)
	}
	h := health.New(r, health.WithLogger(slog.New(slog.DiscardHandler)))
	defer h.Close()
	infos, err := r.Devices(context.Background())
	require.NoError(t, err)
	// The signal is on device 1; a hung call is on whichever device the
	// watch reads next, which the wait below finds.
	on, other := 1, 0
	until := func(what string, ok func(device.DeviceHealth) bool) time.Duration {
		t.Helper()
		start, timeout := time.Now(), time.After(10*time.Second)
		for {
			st := r.Stats()
			if len(st.Health) == 2 && ok(st.Health[on]) {
				return time.Since(start)
			}
			if len(st.Health) == 2 && want == "unknown" && ok(st.Health[other]) {
				on, other = other, on
				return time.Since(start)
			}
			select {
			case <-st.Changed:
			case <-timeout:
				t.Fatalf("never %s: %+v", what, st.Health)
			}
		}
	}
	until("healthy", func(d device.DeviceHealth) bool { return d.Verdict == driver.VerdictHealthy && d.Counters != nil })
	line := func(format string) string {
		if strings.Contains(format, "%s") {
			return fmt.Sprintf(format, infos[1].UUID)
		}
		return format
	}
	appendEvents(t, line(os.Getenv("CASE_LINES"))+"\n")
	took := until(want, func(d device.DeviceHealth) bool { return d.Verdict.String() == want })
	bound := 100 * time.Millisecond
	if os.Getenv("CASE_POLLED") == "true" {
		// A polled state shows at the counters read after the wait that
		// takes its line, a second on: three on a loaded machine at most.
		bound += 3 * (time.Second + countersEvery)
	}
	if want == "unknown" {
		bound += 200 * time.Millisecond // the monitor's deadline
	}
	t.Logf("from the signal to the verdict: %v", took)
	assert.Less(t, took, bound)
	ready, why := h.Readiness()
	assert.Equal(t, os.Getenv("CASE_READY") == "yes", ready, why)
	st := h.Snapshot()
	require.Len(t, st.Devices, 2)
	assert.Equal(t, want, st.Devices[on].Health.Verdict.String(), "the status says it")
	hung := strings.TrimPrefix(os.Getenv("CASE_LINES"), "hang-call ")
	if hung == "nvmlEventSetWait_v2" { // a call about no one device: both are unknown
		assert.Equal(t, driver.VerdictUnknown, st.Devices[other].Health.Verdict, "the wait is every device's")
	} else {
		assert.Equal(t, driver.VerdictHealthy, st.Devices[other].Health.Verdict, "the other device is untouched")
	}
	if want == "unknown" {
		assert.Equal(t, hung, st.Devices[on].Health.HungCall)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		err := r.Shutdown(ctx)
		assert.ErrorContains(t, err, "abandoning the health watch, hung in "+hung, "a call past its deadline")
		assert.ErrorIs(t, err, driver.ErrDeviceHung)
		assert.NotErrorIs(t, err, context.DeadlineExceeded, "abandoned at once, not at ctx's end")
		assert.Less(t, time.Since(start), 3*time.Second, "shutdown within its bound")
		assert.True(t, r.Stats().HealthWatchAbandoned)
		return
	}
	if c := os.Getenv("CASE_CLEAR"); c != "" {
		appendEvents(t, line(c)+"\n")
		until("healthy again", func(d device.DeviceHealth) bool { return d.Verdict == driver.VerdictHealthy })
	}
}

// TestTheWatchUsesLittleCPUWhileNothingHappens measures the NVML watch's CPU
// use per device per minute on a quiet host: its waits (a second each) and
// its counters reads (every 30 s), over a fake that waits without spinning.
func TestTheWatchUsesLittleCPUWhileNothingHappens(t *testing.T) {
	env, _ := fake(t, fakedriver.CUDA)
	events := filepath.Join(t.TempDir(), "events")
	require.NoError(t, os.WriteFile(events, nil, 0o644))
	out := runChild(t, "TestChildWatchCPU", append(slices.Clip(env), EnvNVMLLibrary+"="+fakedriver.Build(t, fakedriver.NVML),
		envEvents+"="+events, "GPUINIT_FAKE_NVML_POLL_MS=1000")...)
	if i := strings.Index(out, "watch CPU per device per minute:"); i >= 0 {
		t.Log(strings.SplitN(out[i:], "\n", 2)[0])
	}
}

func TestChildWatchCPU(t *testing.T) {
	child(t)
	r, _ := watchedRuntime(t)
	const window = 3 * time.Second
	before := childtest.CPUTime(t)
	time.Sleep(window) // the measurement's window: nothing happens in it
	used := childtest.CPUTime(t) - before
	n := len(r.Stats().Health)
	perDeviceMinute := used * time.Duration(time.Minute/window) / time.Duration(n)
	fmt.Printf("watch CPU per device per minute: %v (%v over %v, %d devices)\n", perDeviceMinute, used, window, n)
	assert.Less(t, perDeviceMinute, 600*time.Millisecond, "more than 1% of a core per device")
}
