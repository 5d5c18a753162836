//go:build linux && cgo && !nocuda

package cuda

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHealthWatchStops: what the watch does when NVML misbehaves after init.
func TestHealthWatchStops(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
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
	t.Run("the backoff doubles to its longest, and starts again once a wait has succeeded", func(t *testing.T) {
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
// returns, abandoning the watch, once its ctx ends (or, on a machine so
// loaded that the call's deadline of 10 s came first, at that). It does not
// use watchedRuntime, whose cleanup would Close again: a Close that waited
// for ever would hang the child past its failure.
func TestChildCloseAbandonsAHungWatch(t *testing.T) {
	child(t)
	r := device.New(paced(testTiming))
	_, err := r.Devices(context.Background())
	require.NoError(t, err)
	until(t, r, "both devices are watched", func(st device.Stats) bool {
		return len(st.Health) == 2 && st.Health[0].Watched && st.Health[1].Watched
	})
	if os.Getenv("HANG") == "wait" {
		appendEvents(t, "hang\n")
	}
	log := fakedriver.CallLog(os.Getenv("NVML_LOG"))
	hung := os.Getenv("HUNG")
	require.Eventually(t, func() bool { return len(log.Lines(t, hung)) == 1 }, time.Minute, 5*time.Millisecond,
		"the watch is stuck in NVML (%s)", hung)

	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		closed <- r.Shutdown(ctx)
	}()
	select {
	case err := <-closed:
		assert.ErrorContains(t, err, "abandoning the health watch")
		assert.True(t, errors.Is(err, context.DeadlineExceeded) || errors.Is(err, driver.ErrDeviceHung),
			"given up at its ctx's end, or the call's deadline: %v", err)
	case <-time.After(time.Minute): // a bound on a hang: the NVML call never returns
		t.Fatal("Shutdown has not returned: it waits for the NVML call")
	}
	assert.Equal(t, []string{hung}, log.Lines(t, hung), "the call is still in NVML")
	assert.True(t, r.Stats().HealthWatchAbandoned)
	for _, h := range r.Stats().Health {
		assert.False(t, h.Watched)
		assert.Contains(t, h.Why, "abandoned")
	}
	assert.Empty(t, r.Stats().Lost, "an abandoned watch loses nothing")
}

// TestChildWatchBackoffResets: failed waits in a row back off testTiming's
// 1 ms, then 2 ms, 4 ms, and no longer (its longest); once a wait has
// succeeded (an event), the next failure backs off 1 ms again. Each
// failure's message is taken from the watch's reports as it makes them: at
// 1 ms apart, a poll of the Stats would miss some.
func TestChildWatchBackoffResets(t *testing.T) {
	child(t)
	var rep reports
	r, inject := watchedRuntime(t, fakedriver.Observed{Backend: paced(testTiming), AfterReport: rep.add})
	failure := func(n int) string {
		t.Helper()
		return rep.waitOf(t, n, healthwatch.KindWatchError)[n-1].Message
	}
	appendEvents(t, "error 999\nerror 999\nerror 999\nerror 999\n")
	assert.Contains(t, failure(1), "watching again in 1ms")
	assert.Contains(t, failure(2), "watching again in 2ms", "failed again before any wait succeeded")
	assert.Contains(t, failure(3), "watching again in 4ms")
	assert.Contains(t, failure(4), "watching again in 4ms", "no longer than the longest backoff")
	inject("xid", 1, "13")
	until(t, r, "a wait succeeds", func(st device.Stats) bool { return st.Health[1].Counted["xid 13"] == 1 })
	appendEvents(t, "error 999\n")
	got := failure(5)
	assert.Contains(t, got, "watching again in 1ms", "the backoff starts again once a wait has succeeded")
	assert.False(t, strings.Contains(got, "in 8ms"))
	assert.Empty(t, r.Stats().Lost)
}

// TestNVMLCallsTracked: a watch's NVML call that hangs is bracketed by
// TrackCall: its Begin, on the device it is about (or -1), has no end, and
// every other call's has.
func TestNVMLCallsTracked(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
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
	rec, _ := watchDirectly(t, afterEachWait, true)
	hung := os.Getenv("HUNG")
	if os.Getenv("HANG_BY") == "line" {
		rec.nth(t, 1, 0, healthwatch.KindCounters)
		if hung == "nvmlEventSetWait_v2" {
			appendEvents(t, "hang\n")
		} else {
			appendEvents(t, "hang-call "+hung+"\n")
		}
	}
	log := fakedriver.CallLog(os.Getenv("NVML_LOG"))
	require.Eventually(t, func() bool { return len(log.Lines(t, hung+" hang")) == 1 }, time.Minute, 5*time.Millisecond,
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
// signals on device 1 reaches its verdict, readiness and status within one
// round of the watch (an event by its wait, a polled state by the counters
// read after it), and where the driver clears it, clears; device 0 stays
// healthy. A hung call makes the health of the device it is about unknown,
// naming it, once past the call deadline.
func TestVerdictsThroughARuntime(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
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

// TestChildVerdict: the verdict CASE_VERDICT follows the line, measured in
// the watch's rounds, not on a clock that load stretches. An event is taken
// by a wait of an hour in flight, so only the event itself, reported at
// once, can bring the verdict. A polled state holds by the time the watch
// begins its second wait after the line is appended: the wait in flight,
// or the first begun after the append, takes the line, and the counters
// read after that wait (they are read after each one) sees it. A hung call
// has no next round: the test waits for the monitor to name it.
func TestChildVerdict(t *testing.T) {
	child(t)
	want := os.Getenv("CASE_VERDICT")
	event := os.Getenv("CASE_POLLED") != "true" && want != "unknown"
	timing := testTiming
	timing.counters = afterEachWait
	if event {
		timing = xidTiming
	}
	var (
		rt       atomic.Pointer[device.Runtime]
		appended atomic.Bool
		waits    atomic.Int32         // the waits begun since the line was appended
		inRound  = make(chan bool, 1) // whether the verdict held as the second began
	)
	r, _ := watchedRuntime(t, fakedriver.Observed{Backend: paced(timing), BeforeCall: func(_ int, op string) {
		if op == "nvmlEventSetWait_v2" && appended.Load() && waits.Add(1) == 2 {
			inRound <- rt.Load().Stats().Health[1].Verdict.String() == want
		}
	}})
	rt.Store(r)
	h := health.New(r, health.WithLogger(slog.New(slog.DiscardHandler)))
	defer h.Close()
	infos, err := r.Devices(context.Background())
	require.NoError(t, err)
	// The signal is on device 1; a hung call is on whichever device the
	// watch reads next, which the wait below finds.
	on, other := 1, 0
	wait := func(what string, ok func(device.DeviceHealth) bool) {
		t.Helper()
		until(t, r, what, func(st device.Stats) bool {
			if len(st.Health) == 2 && ok(st.Health[on]) {
				return true
			}
			if len(st.Health) == 2 && want == "unknown" && ok(st.Health[other]) {
				on, other = other, on
				return true
			}
			return false
		})
	}
	wait("healthy", func(d device.DeviceHealth) bool { return d.Verdict == healthwatch.VerdictHealthy && d.Counters != nil })
	line := func(format string) string {
		if strings.Contains(format, "%s") {
			return fmt.Sprintf(format, infos[1].UUID)
		}
		return format
	}
	hung := strings.TrimPrefix(os.Getenv("CASE_LINES"), "hang-call ")
	if want == "unknown" {
		// The monitor's calls are held to a short deadline only now, for
		// the call about to hang: a call before it that a loaded machine
		// stretched past so short a deadline would be taken as hung too.
		r.SetCallDeadline(200 * time.Millisecond)
	}
	start := time.Now()
	appendEvents(t, line(os.Getenv("CASE_LINES"))+"\n")
	appended.Store(true)
	switch {
	case want == "unknown":
		wait("unknown, naming "+hung, func(d device.DeviceHealth) bool {
			return d.Verdict == healthwatch.VerdictUnknown && d.HungCall == hung
		})
	case event:
		wait(want+", by the event", func(d device.DeviceHealth) bool { return d.Verdict.String() == want })
	default:
		select {
		case held := <-inRound:
			assert.True(t, held, "%s by the watch's second wait after the line", want)
		case <-time.After(time.Minute): // a bound on a hang
			t.Fatal("the watch made no second wait after the line")
		}
		wait(want, func(d device.DeviceHealth) bool { return d.Verdict.String() == want })
	}
	t.Logf("from the signal to the verdict: %v", time.Since(start))
	ready, why := h.Readiness()
	assert.Equal(t, os.Getenv("CASE_READY") == "yes", ready, why)
	st := h.Snapshot()
	require.Len(t, st.Devices, 2)
	assert.Equal(t, want, st.Devices[on].Health.Verdict.String(), "the status says it")
	if hung == "nvmlEventSetWait_v2" { // a call about no one device: both are unknown
		assert.Equal(t, healthwatch.VerdictUnknown, st.Devices[other].Health.Verdict, "the wait is every device's")
	} else {
		assert.Equal(t, healthwatch.VerdictHealthy, st.Devices[other].Health.Verdict, "the other device is untouched")
	}
	if want == "unknown" {
		assert.Equal(t, hung, st.Devices[on].Health.HungCall)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound on a hang
		defer cancel()
		err := r.Shutdown(ctx)
		assert.ErrorContains(t, err, "abandoning the health watch, hung in "+hung, "a call past its deadline")
		assert.ErrorIs(t, err, driver.ErrDeviceHung)
		assert.NotErrorIs(t, err, context.DeadlineExceeded, "abandoned at once, not at ctx's end")
		assert.True(t, r.Stats().HealthWatchAbandoned)
		return
	}
	if c := os.Getenv("CASE_CLEAR"); c != "" {
		appendEvents(t, line(c)+"\n")
		wait("healthy again", func(d device.DeviceHealth) bool { return d.Verdict == healthwatch.VerdictHealthy })
	}
	if event {
		parkWatch(t, r)
	}
}

// TestTheWatchUsesLittleCPUWhileNothingHappens measures the NVML watch's CPU
// use per device per minute on a quiet host: its waits (a second each) and
// its counters reads (every 30 s), over a fake that waits without spinning.
func TestTheWatchUsesLittleCPUWhileNothingHappens(t *testing.T) {
	t.Parallel() // its child has files of its own, and measures its own CPU time
	env, _ := fake(t, fakedriver.CUDA)
	events := filepath.Join(t.TempDir(), "events")
	require.NoError(t, os.WriteFile(events, nil, 0o644))
	out := runChild(t, "TestChildWatchCPU", append(slices.Clip(env), EnvNVMLLibrary+"="+fakedriver.Build(t, fakedriver.NVML),
		envEvents+"="+events)...)
	if i := strings.Index(out, "watch CPU per device per minute:"); i >= 0 {
		t.Log(strings.SplitN(out[i:], "\n", 2)[0])
	}
}

// TestChildWatchCPU runs the watch as productionTiming does, scaled down:
// the same calls, a wait of 10 ms for its second and the counters every 30
// waits, as every 30 s. It measures the process's CPU time over a minute's
// worth of rounds (60 waits, between the starts of two), taken on the
// watch's goroutine as each wait begins. That is safe under load: other
// processes' work does not count in this one's CPU time, and the figure is
// per round, whatever wall time the rounds take; the waits block in the
// kernel, so their length changes the wall time, not the CPU.
func TestChildWatchCPU(t *testing.T) {
	child(t)
	const rounds = 60 // a minute of productionTiming's waits
	timing := productionTiming
	timing.wait = 10 * time.Millisecond
	timing.counters = timing.wait * (productionTiming.counters / productionTiming.wait)
	var (
		waits int // on the watch's goroutine alone, as from is
		from  time.Duration
		used  = make(chan time.Duration, 1)
	)
	r, _ := watchedRuntime(t, fakedriver.Observed{Backend: paced(timing), BeforeCall: func(_ int, op string) {
		if op != "nvmlEventSetWait_v2" {
			return
		}
		switch waits++; waits {
		case 1:
			from = cpuTime()
		case 1 + rounds:
			used <- cpuTime() - from
		}
	}})
	var cpu time.Duration
	select {
	case cpu = <-used:
	case <-time.After(time.Minute): // a bound on a hang
		t.Fatalf("the watch did not make %d waits", rounds)
	}
	n := len(r.Stats().Health)
	perDeviceMinute := cpu / time.Duration(n)
	fmt.Printf("watch CPU per device per minute: %v (%v over %d rounds, %d devices)\n", perDeviceMinute, cpu, rounds, n)
	assert.Less(t, perDeviceMinute, 600*time.Millisecond, "more than 1% of a core per device")
}

// cpuTime is the process's user and system CPU time so far; childtest's
// CPUTime, for a goroutine that is not the test's.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru) // it fails only for a bad who
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestWatchTiming: the watch the process's Backend runs (any Backend a
// test has not paced) waits a second in NVML, reads the counters every
// 30 s, and backs off 1 s doubling to 30 s.
func TestWatchTiming(t *testing.T) {
	t.Parallel()
	want := watchTiming{wait: time.Second, counters: 30 * time.Second, backoff: time.Second, maxBackoff: 30 * time.Second}
	assert.Equal(t, want, process.watchTiming())
	assert.Equal(t, want, (&Backend{}).watchTiming())
	assert.Equal(t, want, (*Backend)(nil).watchTiming())
	assert.Equal(t, testTiming, paced(testTiming).watchTiming())
}
