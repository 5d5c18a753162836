//go:build linux && cgo && !nohip

package hip

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
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// smiHost is fakeHost with the fake librocm_smi64 (built from lib) beside
// it; it returns the environment, the events file a test appends to, and
// ROCm SMI's call log. HIP's ordinal 0 is 0000:c1:00.0, ROCm SMI's index 1.
func smiHost(t *testing.T, lib fakedriver.Library, env ...string) (childEnv []string, events string, log fakedriver.CallLog) {
	t.Helper()
	base, _ := fakeHost(t, fakedriver.HIP)
	events = filepath.Join(t.TempDir(), "events")
	require.NoError(t, os.WriteFile(events, nil, 0o644))
	log = fakedriver.NewCallLog(t)
	log.Reset(t) // there, even where nothing loads the fake
	return append(base, append([]string{EnvSMILibrary + "=" + fakedriver.Build(t, lib), "GPUINIT_FAKE_RSMI_EVENTS=" + events,
		"GPUINIT_FAKE_RSMI_LOG=" + string(log), "SMI_EVENTS=" + events}, env...)...), events, log
}

// recorder is a healthwatch.CallTracker that keeps every call it was told of.
type recorder struct {
	mu        sync.Mutex
	calls     []tracked
	canceled  atomic.Bool  // the watch's ctx has ended
	getsAfter atomic.Int32 // gets begun once it had
}

type tracked struct {
	ordinal int
	op      string
	ended   bool
}

func (r *recorder) Begin(ordinal int, op string, _ time.Duration) func() {
	if op == "rsmi_event_notification_get" && r.canceled.Load() {
		r.getsAfter.Add(1)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	i := len(r.calls)
	r.calls = append(r.calls, tracked{ordinal: ordinal, op: op})
	return func() { r.mu.Lock(); r.calls[i].ended = true; r.mu.Unlock() }
}

func (r *recorder) snapshot() []tracked {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// watchRun is one WatchHealth of the process's backend, paced as
// testTiming, running.
type watchRun struct {
	cancel  context.CancelFunc
	done    chan error
	calls   *recorder
	mu      sync.Mutex
	events  []healthwatch.Event
	changed chan struct{} // closed at the next event; nil until a wait asks
}

// startWatch initializes the backend and runs its WatchHealth with a
// recording tracker until the test ends.
func startWatch(t *testing.T) *watchRun {
	t.Helper()
	require.NoError(t, process.Init(context.Background()))
	w := &watchRun{done: make(chan error, 1), calls: &recorder{}}
	ctx, cancel := context.WithCancel(healthwatch.WithCallTracker(context.Background(), w.calls))
	w.cancel = func() {
		cancel()
		w.calls.canceled.Store(true) // after cancel: a get begun since began after it
	}
	go func() {
		w.done <- paced(testTiming).WatchHealth(ctx, func(ev healthwatch.Event) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.events = append(w.events, ev)
			if w.changed != nil {
				close(w.changed)
				w.changed = nil
			}
		})
	}()
	t.Cleanup(cancel)
	return w
}

func (w *watchRun) seen() []healthwatch.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events)
}

// waitFor waits, without polling, until an event that match accepts was
// reported, and returns it.
func (w *watchRun) waitFor(t *testing.T, what string, match func(healthwatch.Event) bool) healthwatch.Event {
	t.Helper()
	var got healthwatch.Event
	childtest.Until(t, what, func() (bool, <-chan struct{}) {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, ev := range w.events {
			if match(ev) {
				got = ev
				return true, nil
			}
		}
		if w.changed == nil {
			w.changed = make(chan struct{})
		}
		return false, w.changed
	})
	return got
}

func appendLine(t *testing.T, file, line string) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fmt.Fprintln(f, line)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestSMIEvents(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
	for _, layout := range []string{"5.2", "6.1", "kernel"} {
		t.Run("each event reaches its device, as ROCm "+layout+" lays it out", func(t *testing.T) {
			t.Parallel()
			env, _, _ := smiHost(t, fakedriver.ROCMSMI, "GPUINIT_FAKE_RSMI_LAYOUT="+layout)
			runChild(t, "TestChildSMIEvents", env...)
		})
	}
}

// TestChildSMIEvents sends each event to each device in turn, and expects
// it with its kind, action and ordinal; ring hang 5 only where the release
// has it, and the kernel's 5 (migrate-start) never, since it is not asked for.
func TestChildSMIEvents(t *testing.T) {
	child(t)
	layout := os.Getenv("GPUINIT_FAKE_RSMI_LAYOUT")
	w := startWatch(t)
	for o := range 2 {
		w.waitFor(t, "events watched", func(ev healthwatch.Event) bool {
			return ev.Ordinal == o && ev.Kind == healthwatch.KindWatching && strings.Contains(ev.Message, "ROCm SMI")
		})
	}
	type want struct {
		event  int
		kind   healthwatch.Kind
		action healthwatch.Action
	}
	cases := []want{{1, healthwatch.KindVMFault, healthwatch.Count}, {2, healthwatch.KindThermal, healthwatch.Count},
		{3, healthwatch.KindReset, healthwatch.Lose}, {4, healthwatch.KindReset, healthwatch.Recover}}
	if layout == "6.1" {
		cases = append(cases, want{5, healthwatch.KindRingHang, healthwatch.Lose})
	}
	msgSize := map[string]int{"5.2": 64, "6.1": 64, "kernel": 96}[layout]
	for ordinal, bus := range []string{"0000:c1:00.0", "0000:03:00.0"} {
		for _, c := range cases {
			msg := fmt.Sprintf("event-%d-on-%d-", c.event, ordinal) + strings.Repeat("m", 120) // longer than any field
			appendLine(t, os.Getenv("SMI_EVENTS"), fmt.Sprintf("%s %d %s", bus, c.event, msg))
			ev := w.waitFor(t, fmt.Sprintf("event %d on device %d", c.event, ordinal), func(ev healthwatch.Event) bool {
				return strings.Contains(ev.Message, fmt.Sprintf("event-%d-on-%d-", c.event, ordinal))
			})
			assert.Equal(t, ordinal, ev.Ordinal, "matched by PCI bus id: ROCm SMI's index %d", 1-ordinal)
			assert.Equal(t, c.kind, ev.Kind)
			assert.Equal(t, c.action, ev.Action)
			assert.Contains(t, ev.Message, "(ROCm SMI: "+msg[:msgSize]+")", "the message read to its field's end, no further")
		}
	}
	if layout != "6.1" {
		appendLine(t, os.Getenv("SMI_EVENTS"), "0000:c1:00.0 5 not-asked-for")
		appendLine(t, os.Getenv("SMI_EVENTS"), "0000:c1:00.0 1 after-five")
		w.waitFor(t, "the next event", func(ev healthwatch.Event) bool { return strings.Contains(ev.Message, "after-five") })
		for _, ev := range w.seen() {
			assert.NotContains(t, ev.Message, "not-asked-for", "event 5 is no ring hang in this release")
		}
	}
}

func TestSMIUnwatched(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
	omitGet := fakedriver.Library{Source: "fakerocmsmi.c", Soname: "librocm_smi64.so.7", Defines: []string{"GPUINIT_FAKE_RSMI_OMIT_rsmi_event_notification_get"}}
	for _, c := range []struct {
		name string
		lib  fakedriver.Library
		env  []string
		want []string // in device 0's unwatched message, one for each device where ordinal is -1
	}{
		{"no library: the events are unknown, and RAS is still read", fakedriver.ROCMSMI,
			[]string{EnvSMILibrary + "=" + fakedriver.NotInstalled("librocm_smi64.so.7")}, []string{"ROCm SMI cannot be used", "are unknown"}},
		{"a library without the event wait names it", omitGet, nil, []string{"dlsym rsmi_event_notification_get"}},
		{"rsmi_init fails, as with no GPU: said so", fakedriver.ROCMSMI, []string{"GPUINIT_FAKE_RSMI_INIT=8"},
			[]string{"ROCm SMI could not start: rsmi_init answered 8 RSMI_STATUS_INIT_ERROR"}},
		{"no ROCm SMI device", fakedriver.ROCMSMI, []string{"GPUINIT_FAKE_RSMI_DEVICES=0"}, []string{"ROCm SMI finds no device"}},
		{"two indexes share one bus id (a partition): neither is guessed", fakedriver.ROCMSMI, []string{"GPUINIT_FAKE_RSMI_BUS=0000:c1:00.0"},
			[]string{"share its PCI bus id 0000:c1:00.0"}},
		{"a device whose notifications cannot start", fakedriver.ROCMSMI,
			[]string{"GPUINIT_FAKE_RSMI_FAIL_CALL=rsmi_event_notification_init", "GPUINIT_FAKE_RSMI_FAIL_CODE=3"},
			[]string{"rsmi_event_notification_init answered 3 RSMI_STATUS_FILE_ERROR"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env, _, log := smiHost(t, c.lib, append(c.env, "WANT="+strings.Join(c.want, "|"))...)
			runChild(t, "TestChildSMIUnwatched", env...)
			started := len(log.Lines(t, "rsmi_init"))
			if slices.Contains(c.env, "GPUINIT_FAKE_RSMI_INIT=8") {
				started = 0 // a failed rsmi_init started nothing to shut down (5.2.3 answers 8 to it)
			}
			assert.Len(t, log.Lines(t, "rsmi_shut_down"), started, "what started ROCm SMI shut it down")
			assert.Empty(t, log.Lines(t, "before-init"), "no call before rsmi_init")
		})
	}
}

// TestChildSMIUnwatched: both devices' events are unwatched with why, and
// RAS still watches and reads them.
func TestChildSMIUnwatched(t *testing.T) {
	child(t)
	for _, bus := range []string{"0000:c1:00.0", "0000:03:00.0"} {
		setRAS(t, bus, 0, 1)
	}
	w := startWatch(t)
	for o := range 2 {
		ev := w.waitFor(t, "events unwatched", func(ev healthwatch.Event) bool {
			return ev.Ordinal == o && ev.Kind == healthwatch.KindUnwatched && strings.Contains(ev.Message, "events")
		})
		if o == 0 || !strings.Contains(os.Getenv("WANT"), "share") {
			for _, want := range strings.Split(os.Getenv("WANT"), "|") {
				assert.Contains(t, ev.Message, want)
			}
		}
		w.waitFor(t, "RAS watched", func(ev healthwatch.Event) bool { return ev.Ordinal == o && ev.Kind == healthwatch.KindWatching })
		w.waitFor(t, "RAS read", func(ev healthwatch.Event) bool { return ev.Ordinal == o && ev.Kind == healthwatch.KindCounters })
	}
	w.cancel()
	select {
	case err := <-w.done:
		require.NoError(t, err)
	case <-time.After(time.Minute): // a bound on a hang
		t.Fatal("the watch did not return after its ctx ended")
	}
}

func TestSMIWatchEnds(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
	t.Run("ctx's end stops each device's notifications and shuts ROCm SMI down, promptly", func(t *testing.T) {
		t.Parallel()
		env, _, log := smiHost(t, fakedriver.ROCMSMI)
		runChild(t, "TestChildSMIStop", env...)
		assert.ElementsMatch(t, []string{"rsmi_event_notification_stop 0", "rsmi_event_notification_stop 1"}, log.Lines(t, "rsmi_event_notification_stop"))
		lines := log.Lines(t, "rsmi_")
		require.NotEmpty(t, lines)
		assert.Equal(t, "rsmi_shut_down", lines[len(lines)-1], "shut down last")
		assert.ElementsMatch(t, []string{"mask 0 0xf", "mask 1 0xf"}, log.Lines(t, "mask"), "5.2.3: events 1 to 4")
	})
	t.Run("a failing wait is a watch error, and the watch waits again", func(t *testing.T) {
		t.Parallel()
		env, _, _ := smiHost(t, fakedriver.ROCMSMI)
		runChild(t, "TestChildSMIWaitError", env...)
	})
}

func TestChildSMIStop(t *testing.T) {
	child(t)
	w := startWatch(t)
	w.waitFor(t, "watching", func(ev healthwatch.Event) bool { return ev.Kind == healthwatch.KindWatching })
	require.Eventually(t, func() bool {
		return slices.ContainsFunc(w.calls.snapshot(), func(c tracked) bool { return c.op == "rsmi_event_notification_get" })
	}, time.Minute, 5*time.Millisecond, "the watch waits for events")
	w.cancel()
	select {
	case err := <-w.done:
		require.NoError(t, err)
	case <-time.After(time.Minute): // a bound on a hang
		t.Fatal("the watch did not return after its ctx ended")
	}
	assert.LessOrEqual(t, w.calls.getsAfter.Load(), int32(1),
		"it returns within one get of its ctx's end (the one it may have begun as the ctx ended), then stops")
	for _, c := range w.calls.snapshot() {
		assert.True(t, c.ended, "%s on %d ended", c.op, c.ordinal)
	}
}

func TestChildSMIWaitError(t *testing.T) {
	child(t)
	w := startWatch(t)
	w.waitFor(t, "watching", func(ev healthwatch.Event) bool { return ev.Kind == healthwatch.KindWatching })
	appendLine(t, os.Getenv("SMI_EVENTS"), "error 6")
	appendLine(t, os.Getenv("SMI_EVENTS"), "0000:03:00.0 1 after-the-error")
	ev := w.waitFor(t, "a watch error", func(ev healthwatch.Event) bool { return ev.Kind == healthwatch.KindWatchError })
	assert.Contains(t, ev.Message, "rsmi_event_notification_get answered 6 RSMI_STATUS_INTERNAL_EXCEPTION")
	ev = w.waitFor(t, "the next event", func(ev healthwatch.Event) bool { return strings.Contains(ev.Message, "after-the-error") })
	assert.Equal(t, 1, ev.Ordinal)
}

func TestSMIHungCall(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
	for _, op := range []string{"rsmi_init", "rsmi_event_notification_init", "rsmi_event_notification_get"} {
		t.Run(op+" that never returns is tracked, and never ended", func(t *testing.T) {
			t.Parallel()
			env, _, log := smiHost(t, fakedriver.ROCMSMI, "GPUINIT_FAKE_RSMI_HANG="+op, "WANT_OP="+op)
			runChild(t, "TestChildSMIHungCall", env...)
			assert.Equal(t, []string{op + " hang"}, log.Lines(t, op+" hang"), "the fake hung in it")
		})
	}
}

func TestChildSMIHungCall(t *testing.T) {
	child(t)
	w := startWatch(t)
	op := os.Getenv("WANT_OP")
	log := fakedriver.CallLog(os.Getenv("GPUINIT_FAKE_RSMI_LOG"))
	require.Eventually(t, func() bool { return len(log.Lines(t, op+" hang")) == 1 }, time.Minute, 5*time.Millisecond,
		"the fake hangs in %s", op) // once it does, the call cannot return
	calls := w.calls.snapshot()
	i := slices.IndexFunc(calls, func(c tracked) bool { return c.op == op })
	assert.False(t, calls[i].ended, "%s is still in the driver", op)
	assert.Len(t, calls, i+1, "nothing was called after it")
	want := -1
	if op == "rsmi_event_notification_init" {
		want = 0 // device 0 is started first: ROCm SMI's index 1, by its bus id
	}
	assert.Equal(t, want, calls[i].ordinal)
	for _, c := range calls[:i] {
		assert.True(t, c.ended, "%s before it ended", c.op)
	}
}

func TestSMIRingHangLosesTheDevice(t *testing.T) {
	t.Parallel() // its child has files of its own
	env, _, _ := smiHost(t, fakedriver.ROCMSMI, "GPUINIT_FAKE_RSMI_LAYOUT=6.1")
	runChild(t, "TestChildSMIRingHang", env...)
}

// TestChildSMIRingHang: through a Runtime, a ring hang on device 0 loses it
// alone.
func TestChildSMIRingHang(t *testing.T) {
	child(t)
	setRAS(t, "0000:c1:00.0", 0, 0) // RAS, reported after the events, is what marks both watched
	setRAS(t, "0000:03:00.0", 0, 0)
	r := device.New(paced(testTiming))
	t.Cleanup(func() { assert.NoError(t, r.Shutdown(context.Background())) })
	require.NoError(t, r.Init(context.Background()))
	until(t, r, "both devices are watched", func(st device.Stats) bool {
		h := st.Health
		return len(h) == 2 && h[0].Watched && h[1].Watched
	})
	appendLine(t, os.Getenv("SMI_EVENTS"), "0000:c1:00.0 5 gfx_0.0.0-timeout")
	until(t, r, "device 0 is lost", func(device.Stats) bool { return r.CheckDevice(0) != nil })
	assert.ErrorIs(t, r.CheckDevice(0), device.ErrDeviceLost)
	assert.ErrorContains(t, r.CheckDevice(0), "a ring (a GPU queue) hung")
	assert.NoError(t, r.CheckDevice(1))
}

// TestRealSMI binds whatever librocm_smi64 the loader finds beside the fake
// HIP: in CI's hip leg Debian's 5.2.3, whose rsmi_init fails with no GPU.
func TestRealSMI(t *testing.T) {
	t.Parallel() // its child has files of its own
	env, _ := fakeHost(t, fakedriver.HIP, EnvSMILibrary+"=")
	out, skipped := startChild(t, "TestChildRealSMI", env...)
	if skipped {
		t.Skipf("no ROCm SMI here:\n%s", out)
	}
	t.Log(out)
}

func TestChildRealSMI(t *testing.T) {
	child(t)
	if _, err := loadSMI(); err != nil && strings.Contains(err.Error(), "not found") {
		t.Skip("no librocm_smi64 on this machine:", err)
	}
	w := startWatch(t)
	for o := range 2 {
		ev := w.waitFor(t, "device's events placed or not", func(ev healthwatch.Event) bool {
			return ev.Ordinal == o && (ev.Kind == healthwatch.KindUnwatched && strings.Contains(ev.Message, "events") ||
				ev.Kind == healthwatch.KindWatching && strings.Contains(ev.Message, "ROCm SMI"))
		})
		t.Logf("device %d: %s: %s", o, ev.Kind, ev.Message)
		if ev.Kind == healthwatch.KindUnwatched { // no GPU: rsmi_init fails, or finds no device
			assert.Regexp(t, `ROCm SMI could not start: rsmi_init answered \d+ RSMI_STATUS_|ROCm SMI finds no device|no ROCm SMI device has`, ev.Message)
		}
	}
	lib, _ := loadSMI()
	t.Logf("bound every ROCm SMI symbol in %s", lib.Path)
}
