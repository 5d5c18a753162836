//go:build linux && cgo && !nocuda

package cuda

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envEvents is the fake NVML's events file, which a child appends to.
const envEvents = "GPUINIT_FAKE_NVML_EVENTS"

func TestHealthWatch(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
	env, _ := fake(t, fakedriver.CUDA)
	env = slices.Clip(env) // the parallel subtests append to it
	nvml := fakedriver.Build(t, fakedriver.NVML)
	withEvents := func(t *testing.T, extra ...string) []string {
		events := filepath.Join(t.TempDir(), "events")
		require.NoError(t, os.WriteFile(events, nil, 0o644))
		return append(append(env, EnvNVMLLibrary+"="+nvml, envEvents+"="+events), extra...)
	}
	for _, c := range []struct{ name, child string }{
		{"Xid 79 on one of two devices loses that device alone, named, as its event is reported", "TestChildXidLosesOneDevice"},
		{"Xid 13 is counted and the device serves on", "TestChildXidCounted"},
		{"a double-bit ECC error loses the device and a single-bit one is counted", "TestChildECC"},
		{"a failed wait is reported and watched again, and loses nothing", "TestChildWatchErrorRetried"},
		{"the counters a server should see are read", "TestChildCounters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each child has its own fakes' files, and mostly waits in NVML
			runChild(t, c.child, withEvents(t, "GPUINIT_FAKE_NVML_PERSISTENCE=0", "GPUINIT_FAKE_NVML_ECC_CORRECTED=5",
				"GPUINIT_FAKE_NVML_REMAP_PENDING=1", "GPUINIT_FAKE_NVML_THROTTLE=72",
				"GPUINIT_FAKE_NVML_RETIRED_SBE=2", "GPUINIT_FAKE_NVML_RETIRED_DBE=1", "GPUINIT_FAKE_NVML_RETIRED_PENDING=1")...)
		})
	}
	t.Run("an idle watch blocks in NVML's wait, to its timeout each time", func(t *testing.T) {
		t.Parallel()
		log := fakedriver.NewCallLog(t)
		runChild(t, "TestChildIdleWatch", withEvents(t, "GPUINIT_FAKE_NVML_LOG="+string(log), "NVML_LOG="+string(log))...)
	})
	t.Run("the fake's wait cap ends a wait of an hour at 20 ms (fakedriver.ShortWaits)", func(t *testing.T) {
		t.Parallel()
		log := fakedriver.NewCallLog(t)
		runChild(t, "TestChildShortWaits", withEvents(t, append(fakedriver.ShortWaits, "GPUINIT_FAKE_NVML_LOG="+string(log), "NVML_LOG="+string(log))...)...)
	})
	t.Run("without NVML, health is unknown, said so", func(t *testing.T) {
		t.Parallel()
		runChild(t, "TestChildHealthUnknown", append(env, EnvNVMLLibrary+"=/nonexistent/libnvidia-ml.so.1",
			"WANT_WHY=libnvidia-ml.so.1")...)
	})
	t.Run("where no device supports events, health is unknown, said so", func(t *testing.T) {
		t.Parallel()
		runChild(t, "TestChildHealthUnknown", withEvents(t, "GPUINIT_FAKE_NVML_NO_EVENTS=1", "WANT_WHY=Jetson")...)
	})
}

// testTiming paces a test's watch, where productionTiming waits a second
// and more: waits of 20 ms, so that a Shutdown waits for one no longer, the
// counters read at the start alone (a test that needs them read again sets
// afterEachWait), and a backoff of 1 ms doubling to 4 ms.
var testTiming = watchTiming{wait: 20 * time.Millisecond, counters: time.Hour, backoff: time.Millisecond, maxBackoff: 4 * time.Millisecond}

// afterEachWait, as the counters' period, reads them after every wait.
const afterEachWait = time.Nanosecond

// paced is a Backend of the process's driver whose health watch keeps to
// timing.
func paced(timing watchTiming) *Backend { return &Backend{timing: &timing} }

// watchedRuntime returns an initialized Runtime over b (a paced Backend,
// or one observed) once its health watch watches both devices, and a
// function that injects an event line.
func watchedRuntime(t *testing.T, b driver.Backend) (*device.Runtime, func(format string, ordinal int, rest ...string)) {
	t.Helper()
	r := device.New(b)
	t.Cleanup(func() {
		if !r.Stats().Closed { // a test that shut it down checked its result
			assert.NoError(t, r.Shutdown(context.Background()))
		}
	})
	ctx := context.Background()
	infos, err := r.Devices(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 2)
	until(t, r, "both devices are watched", func(st device.Stats) bool {
		return len(st.Health) == 2 && st.Health[0].Watched && st.Health[1].Watched
	})
	inject := func(kind string, ordinal int, rest ...string) {
		appendEvents(t, strings.Join(append([]string{kind, infos[ordinal].UUID}, rest...), " ")+"\n")
	}
	return r, inject
}

// until waits on r's Stats().Changed until ok holds of its Stats.
func until(t *testing.T, r *device.Runtime, what string, ok func(device.Stats) bool) {
	t.Helper()
	childtest.Until(t, what, func() (bool, <-chan struct{}) {
		st := r.Stats()
		return ok(st), st.Changed()
	})
}

// reports keeps what an observed watch reported, in order, for a test to
// wait on: a state the watch passes through may last less than a poll.
type reports struct {
	mu      sync.Mutex
	events  []healthwatch.Event
	changed chan struct{} // closed at the next event
}

func (r *reports) add(ev healthwatch.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// waitOf waits for the nth (from 1) event of kind, and returns them all.
func (r *reports) waitOf(t *testing.T, n int, kind healthwatch.Kind) []healthwatch.Event {
	t.Helper()
	var of []healthwatch.Event
	childtest.Until(t, fmt.Sprintf("event %d of kind %s", n, kind), func() (bool, <-chan struct{}) {
		r.mu.Lock()
		defer r.mu.Unlock()
		of = of[:0]
		for _, ev := range r.events {
			if ev.Kind == kind {
				of = append(of, ev)
			}
		}
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		return len(of) >= n, r.changed
	})
	return of
}

// xidTiming makes the watch wait an hour at a time, read the counters at
// the start alone, and back off an hour: in its test, only the event, taken
// by the wait in flight, can lose the device.
var xidTiming = watchTiming{wait: time.Hour, counters: time.Hour, backoff: time.Hour, maxBackoff: time.Hour}

// TestChildXidLosesOneDevice: the Xid, appended while the watch is in a
// wait of an hour, is taken by that wait, and the device is lost by the
// time its report returns: before the watch's next driver call, with no
// period or poll between the event and the loss.
func TestChildXidLosesOneDevice(t *testing.T) {
	child(t)
	var rt atomic.Pointer[device.Runtime]
	lostAtReport := make(chan bool, 1)
	r, inject := watchedRuntime(t, fakedriver.Observed{Backend: paced(xidTiming), AfterReport: func(ev healthwatch.Event) {
		if ev.Kind == healthwatch.KindXid && ev.Ordinal == 1 {
			lostAtReport <- rt.Load().CheckDevice(1) != nil
		}
	}})
	rt.Store(r)
	start := time.Now()
	inject("xid", 1, "79")
	select {
	case lost := <-lostAtReport:
		assert.True(t, lost, "the device is lost by the time the Xid's report returns")
	case <-time.After(time.Minute): // a bound on a hang, far past any wait of the watch's but its hour
		t.Fatal("the Xid was not taken by the wait in flight")
	}
	t.Logf("from the Xid to the loss: %v", time.Since(start))

	lost := r.Stats().Lost
	require.Len(t, lost, 1)
	assert.Equal(t, 1, lost[0].Ordinal)
	assert.Equal(t, device.LossXid, lost[0].Source)
	assert.Equal(t, 79, lost[0].Err.Code)
	assert.Equal(t, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", lost[0].Err.Name)
	assert.Contains(t, lost[0].Error(), "fallen off the bus")
	assert.Contains(t, lost[0].Err.Hint, "catalog")
	assert.ErrorIs(t, r.CheckDevice(1), device.ErrDeviceLost)

	assert.NoError(t, r.CheckDevice(0), "the other device serves")
	_, err := r.Memory(context.Background(), 0)
	assert.NoError(t, err)
	assert.Equal(t, map[string]int64{"xid 79": 1}, r.Stats().Health[1].Counted)
	parkWatch(t, r)
}

// parkWatch ends the wait in flight of a watch paced by xidTiming with a
// failed wait, so that the watch sits in its backoff of an hour, which its
// ctx's end interrupts at once: the test's Shutdown then waits for no wait.
func parkWatch(t *testing.T, r *device.Runtime) {
	t.Helper()
	appendEvents(t, "error 999\n")
	until(t, r, "the watch backs off", func(st device.Stats) bool { return st.Health[0].WatchErrors == 1 })
}

func TestChildXidCounted(t *testing.T) {
	child(t)
	r, inject := watchedRuntime(t, paced(testTiming))
	inject("xid", 0, "13")
	// The device's health counts it, then the Runtime's ErrorCounts (each a
	// change of its own): wait for both.
	until(t, r, "the Xid is counted", func(st device.Stats) bool {
		return st.Health[0].Counted["xid 13"] == 1 && st.ErrorCounts[0] > 0
	})
	assert.Empty(t, r.Stats().Lost)
	assert.NoError(t, r.CheckDevice(0))
	assert.Equal(t, map[int]int64{0: 1}, r.Stats().ErrorCounts)
}

func TestChildECC(t *testing.T) {
	child(t)
	r, inject := watchedRuntime(t, paced(testTiming))
	inject("ecc-single", 0)
	inject("ecc-double", 1)
	until(t, r, "both ECC errors are seen", func(st device.Stats) bool {
		return len(st.Lost) == 1 && st.Health[0].Counted["ecc corrected"] == 1
	})
	lost := r.Stats().Lost
	assert.Equal(t, 1, lost[0].Ordinal)
	assert.Equal(t, device.LossECC, lost[0].Source)
	assert.Contains(t, lost[0].Err.Message, "double-bit")
	assert.NoError(t, r.CheckDevice(0))
}

// TestChildWatchErrorRetried: a failed wait is a watch error on every
// device, told by the time its report returns (the watch watches again
// 1 ms later, which clears it: a poll could miss it), and the watch runs
// again.
func TestChildWatchErrorRetried(t *testing.T) {
	child(t)
	var rt atomic.Pointer[device.Runtime]
	told := make(chan []string, 1)
	r, inject := watchedRuntime(t, fakedriver.Observed{Backend: paced(testTiming), AfterReport: func(ev healthwatch.Event) {
		if ev.Kind == healthwatch.KindWatchError {
			h := rt.Load().Stats().Health
			select {
			case told <- []string{h[0].WatchError, h[1].WatchError}:
			default:
			}
		}
	}})
	rt.Store(r)
	appendEvents(t, "error 999\n") // the next wait fails with NVML_ERROR_UNKNOWN
	var errs []string
	select {
	case errs = <-told:
	case <-time.After(time.Minute): // a bound on a hang
		t.Fatal("no watch error was reported")
	}
	assert.Contains(t, errs[0], "NVML_ERROR_UNKNOWN", "every device is told of the failure")
	assert.Contains(t, errs[1], "watching again in 1ms", "every device is told of the failure")
	assert.Empty(t, r.Stats().Lost, "an NVML failure loses no device")
	inject("xid", 1, "13")
	until(t, r, "the watch runs again", func(st device.Stats) bool { return st.Health[1].Counted["xid 13"] == 1 })
	h := r.Stats().Health[1]
	assert.Empty(t, h.WatchError, "cleared once it watches again")
	assert.Equal(t, int64(1), h.WatchErrors)
	assert.Empty(t, r.Stats().Lost)
}

func TestChildCounters(t *testing.T) {
	child(t)
	r, _ := watchedRuntime(t, paced(testTiming))
	until(t, r, "the counters are read", func(st device.Stats) bool { return st.Health[1].Counters != nil })
	c := r.Stats().Health[1].Counters
	require.NotNil(t, c.Persistence)
	assert.False(t, *c.Persistence)
	assert.Contains(t, r.Stats().Health[1].Hint, "1-3 s per GPU", "persistence mode off: the init's cost is named")
	require.NotNil(t, c.ECCCorrected)
	assert.Equal(t, uint64(5), *c.ECCCorrected)
	require.NotNil(t, c.RowRemapsPending)
	assert.True(t, *c.RowRemapsPending)
	assert.Equal(t, []string{"hw-slowdown", "hw-thermal-slowdown"}, c.ThrottleReasons)
	require.NotNil(t, c.RetiredPages)
	assert.Equal(t, uint64(3), *c.RetiredPages, "pages retired for either cause")
	require.NotNil(t, c.RetiredPagesPending)
	assert.True(t, *c.RetiredPagesPending)
	assert.Empty(t, r.Stats().Lost, "counters lose nothing")
}

func TestChildHealthUnknown(t *testing.T) {
	child(t)
	r := device.New(process)
	t.Cleanup(func() { assert.NoError(t, r.Shutdown(context.Background())) })
	_, err := r.Devices(context.Background())
	require.NoError(t, err)
	want := os.Getenv("WANT_WHY")
	until(t, r, "the reason names "+want, func(st device.Stats) bool {
		h := st.Health
		return len(h) == 2 && strings.Contains(h[0].Why, want) && strings.Contains(h[1].Why, want)
	})
	for _, h := range r.Stats().Health {
		assert.False(t, h.Watched)
		assert.Contains(t, h.Why, "unknown")
	}
	assert.Empty(t, r.Stats().Lost)
	assert.NoError(t, r.CheckDevice(0), "an unknown health loses nothing")
}

func TestCanary(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
	env, _ := fake(t, fakedriver.CUDA)
	env = slices.Clip(env) // the parallel subtests append to it
	t.Run("a round trip in the device's primary context, freed", func(t *testing.T) {
		t.Parallel()
		env, log := fake(t, fakedriver.CUDA) // a log of its own
		runChild(t, "TestChildCanary", append(env, "WANT=ok")...)
		assert.Equal(t, []string{"cuMemAlloc_v2 4", "cuMemsetD32_v2 1", "cuMemcpyDtoH_v2 4", "cuMemFree_v2"},
			log.Lines(t, "cuMemAlloc", "cuMemset", "cuMemcpy", "cuMemFree"))
	})
	t.Run("a pattern read back wrong loses the device", func(t *testing.T) {
		t.Parallel()
		runChild(t, "TestChildCanary", append(env, "WANT=mismatch", "GPUINIT_FAKE_CUDA_MEMSET_CORRUPT=1")...)
	})
	t.Run("a round trip that hangs loses the device at the call deadline, and starts no second", func(t *testing.T) {
		t.Parallel()
		runChild(t, "TestChildCanary", append(env, "WANT=hang", "GPUINIT_FAKE_CUDA_MEMSET_HANG=1")...)
	})
}

func TestChildCanary(t *testing.T) {
	child(t)
	r := device.New(process)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := r.Shutdown(ctx)
		if os.Getenv("WANT") == "hang" {
			assert.ErrorContains(t, err, "1 call(s) on device 1, lost as hung", "the hung round trip is abandoned, not waited for")
			assert.NotErrorIs(t, err, context.DeadlineExceeded, "at once: its device was lost as hung")
			return
		}
		assert.NoError(t, err)
	})
	ctx := context.Background()
	switch os.Getenv("WANT") {
	case "ok":
		require.NoError(t, r.Canary(ctx, 1))
		assert.Empty(t, r.Stats().Lost)
	case "mismatch":
		err := r.Canary(ctx, 1)
		require.ErrorIs(t, err, device.ErrDeviceLost)
		assert.ErrorContains(t, err, "gave back 0x9e3679b9 for the 0x9e3779b9 it set")
		lost := r.Stats().Lost
		require.Len(t, lost, 1)
		assert.Equal(t, device.LossCanary, lost[0].Source)
		assert.NoError(t, r.CheckDevice(0))
	case "hang":
		require.NoError(t, r.Init(ctx))
		r.SetCallDeadline(50 * time.Millisecond)
		wait, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		err := r.Canary(wait, 1)
		require.ErrorIs(t, err, context.DeadlineExceeded, "the wait ends with its context")
		again := r.Canary(ctx, 1)
		assert.ErrorContains(t, again, "is still running", "no second round trip while the first is stuck")
		require.Eventually(t, func() bool { return r.CheckDevice(1) != nil }, 10*time.Second, time.Millisecond)
		lost := r.Stats().Lost
		assert.Equal(t, device.LossDeadline, lost[0].Source)
		assert.Equal(t, "canary", lost[0].Err.Op)
		assert.ErrorIs(t, r.Canary(ctx, 1), device.ErrDeviceLost, "a lost device's canary fails at once")
	}
}

// TestChildIdleWatch: with no events, the watch makes one blocking wait
// after another, each for the timing's wait (productionTiming's second:
// TestWatchTiming), each ending at its timeout, with no call between: so it
// uses no CPU between events. The fake logs a timeout only once its clock
// has reached it, as a real NVML's blocks in the kernel.
func TestChildIdleWatch(t *testing.T) {
	child(t)
	watchedRuntime(t, paced(testTiming))
	log := fakedriver.CallLog(os.Getenv("NVML_LOG"))
	// waits are the log's lines from the first wait on.
	waits := func() []string {
		lines := log.Lines(t)
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "nvmlEventSetWait_v2 wait") })
		if i < 0 {
			return nil
		}
		return lines[i:]
	}
	require.Eventually(t, func() bool { return len(waits()) >= 6 }, time.Minute, 10*time.Millisecond, "three waits")
	assert.Equal(t, slices.Repeat([]string{"nvmlEventSetWait_v2 wait 20", "nvmlEventSetWait_v2 timeout"}, 3), waits()[:6],
		"each wait to its timeout, and nothing between")
}

// TestChildShortWaits: under fakedriver.ShortWaits, a watch that asks for
// waits of an hour sees each time out at 20 ms, and the log says what it
// asked. Without the cap the first wait would not end for an hour.
func TestChildShortWaits(t *testing.T) {
	child(t)
	watchedRuntime(t, paced(xidTiming))
	log := fakedriver.CallLog(os.Getenv("NVML_LOG"))
	timeouts := func() []string {
		return slices.DeleteFunc(log.Lines(t), func(l string) bool { return !strings.HasPrefix(l, "nvmlEventSetWait_v2") })
	}
	require.Eventually(t, func() bool { return len(timeouts()) >= 6 }, 20*time.Second, 10*time.Millisecond, "three waits timed out")
	assert.Equal(t, slices.Repeat([]string{"nvmlEventSetWait_v2 wait 3600000", "nvmlEventSetWait_v2 timeout"}, 3), timeouts()[:6])
}
