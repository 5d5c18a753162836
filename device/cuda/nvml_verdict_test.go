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

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNVMLVerdicts: the watch reports the driver's own verdicts over the
// fake NVML, each in a child that runs the backend's WatchHealth itself.
func TestNVMLVerdicts(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
	runVerdictChildren(t, []verdictCase{
		{"the recovery action is reported at the start and on its event, mapped", "TestChildRecoveryAction", false, nil},
		{"Xid 154 makes the watch read the recovery action again", "TestChildRecoveryOnXid154", false, nil},
		{"a recovery action other than none at the start loses the device", "TestChildRecoveryAtStart", false,
			[]string{"GPUINIT_FAKE_NVML_RECOVERY=2"}},
		{"the GPU-unavailable event loses the device", "TestChildGPUUnavailable", false, nil},
		{"a field the driver does not support reports nothing, read once per counters read", "TestChildVerdictsUnsupported",
			false, []string{"GPUINIT_FAKE_NVML_NO_RECOVERY=1", "WANT_FIELD_CALLS=1"}},
		{"an NVML without the verdicts' calls still watches, and reports none", "TestChildVerdictsUnsupported", true, nil},
		{"row remapping: pending degrades, failed loses, cleared recovers", "TestChildRemapVerdict", false, nil},
		{"the PCIe replay counter is read and reported at each read", "TestChildReplays", false,
			[]string{"GPUINIT_FAKE_NVML_REPLAYS=3"}},
	})
}

// verdictCase is one child of the verdict tests: its name, its TestChild
// function, whether the fake NVML is an old one (FAKE_NVML_OLD), and the
// environment that sets the fake's knobs.
type verdictCase struct {
	name, child string
	old         bool
	env         []string
}

// runVerdictChildren runs each case in a child of its own, in parallel,
// over the fake libcuda and the fake NVML, with its own events file and call
// log (NVML_LOG).
func runVerdictChildren(t *testing.T, cases []verdictCase) {
	env, _ := fake(t, fakedriver.CUDA)
	env = slices.Clip(env) // the parallel subtests append to it
	libs := map[bool]string{false: fakedriver.Build(t, fakedriver.NVML)}
	if slices.ContainsFunc(cases, func(c verdictCase) bool { return c.old }) {
		libs[true] = fakedriver.Build(t, fakedriver.Library{Source: "fakenvml.c", Soname: "libnvidia-ml.so.1",
			Defines: []string{"FAKE_NVML_OLD"}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each child has its own fakes' files, and mostly waits in NVML
			events := filepath.Join(t.TempDir(), "events")
			require.NoError(t, os.WriteFile(events, nil, 0o644))
			log := fakedriver.NewCallLog(t)
			log.Reset(t) // exists before the fake's first call, for the child's reads of it
			runChild(t, c.child, append(append(env, EnvNVMLLibrary+"="+libs[c.old], envEvents+"="+events,
				"GPUINIT_FAKE_NVML_LOG="+string(log), "NVML_LOG="+string(log)), c.env...)...)
		})
	}
}

// recorder is a test's CallTracker and report func: it keeps every call's
// Begin and whether it ended, and every event.
type recorder struct {
	mu         sync.Mutex
	calls      []*trackedCall
	events     []healthwatch.Event
	changed    chan struct{} // closed at the next call or event; nil until a wait asks
	uuids      []string      // each device's
	canceled   atomic.Bool   // the watch's ctx has ended
	waitsAfter atomic.Int32  // waits begun once it had
}

type trackedCall struct {
	ordinal int
	op      string
	ended   bool
}

// touch wakes the waits on r; r.mu is held.
func (r *recorder) touch() {
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

func (r *recorder) Begin(ordinal int, op string, _ time.Duration) func() {
	if op == "nvmlEventSetWait_v2" && r.canceled.Load() {
		r.waitsAfter.Add(1)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &trackedCall{ordinal: ordinal, op: op}
	r.calls = append(r.calls, c)
	r.touch()
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		c.ended = true
		r.touch()
	}
}

func (r *recorder) report(ev healthwatch.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	r.touch()
}

// until waits, without polling, until ok holds of what r has seen.
func (r *recorder) until(t *testing.T, what string, ok func() bool) {
	t.Helper()
	childtest.Until(t, what, func() (bool, <-chan struct{}) {
		r.mu.Lock()
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		changed := r.changed
		r.mu.Unlock()
		return ok(), changed
	})
}

// of returns the events of kind for ordinal so far.
func (r *recorder) of(ordinal int, kind healthwatch.Kind) []healthwatch.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ofLocked(ordinal, kind)
}

func (r *recorder) ofLocked(ordinal int, kind healthwatch.Kind) []healthwatch.Event {
	var out []healthwatch.Event
	for _, ev := range r.events {
		if ev.Ordinal == ordinal && ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// nth waits for the nth (from 1) event of kind for ordinal and returns it.
func (r *recorder) nth(t *testing.T, n, ordinal int, kind healthwatch.Kind) healthwatch.Event {
	t.Helper()
	r.until(t, fmt.Sprintf("event %d of kind %s on device %d", n, kind, ordinal), func() bool { return len(r.of(ordinal, kind)) >= n })
	return r.of(ordinal, kind)[n-1]
}

// open returns the calls that began and have not ended.
func (r *recorder) open() []trackedCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []trackedCall
	for _, c := range r.calls {
		if !c.ended {
			out = append(out, *c)
		}
	}
	return out
}

// count is how many times op began.
func (r *recorder) count(op string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.countLocked(op)
}

func (r *recorder) countLocked(op string) int {
	n := 0
	for _, c := range r.calls {
		if c.op == op {
			n++
		}
	}
	return n
}

// watchDirectly initializes the backend and runs its WatchHealth, paced
// as testTiming with the counters read every counters (afterEachWait, or
// testTiming's hour: at the start alone), with a recorder until the test
// ends; then it waits for the watch to return unless hangs is set. It
// returns the recorder and each device's UUID.
func watchDirectly(t *testing.T, counters time.Duration, hangs bool) (*recorder, []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, process.Init(ctx))
	uuids := make([]string, 2)
	for i := range uuids {
		info, err := process.Device(i)
		require.NoError(t, err)
		uuids[i] = info.UUID
	}
	timing := testTiming
	timing.counters = counters
	rec := &recorder{uuids: uuids}
	done := make(chan error, 1)
	go func() { done <- paced(timing).WatchHealth(healthwatch.WithCallTracker(ctx, rec), rec.report) }()
	t.Cleanup(func() {
		cancel()
		rec.canceled.Store(true) // after cancel: a wait begun since began after it
		if hangs {
			return // the watch's goroutine stays in the hung call, as in a Runtime that abandons it
		}
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(time.Minute): // a bound on a hang
			t.Error("the watch did not return after its ctx's end")
		}
		assert.LessOrEqual(t, rec.waitsAfter.Load(), int32(1),
			"the watch returns within one wait of its ctx's end: the one it may have begun as the ctx ended")
		assert.Empty(t, rec.open(), "every call began has ended")
	})
	return rec, uuids
}

// inject appends one line to the fake NVML's events file.
func inject(t *testing.T, words ...string) {
	t.Helper()
	appendEvents(t, strings.Join(words, " ")+"\n")
}

func TestChildRecoveryAction(t *testing.T) {
	child(t)
	rec, uuids := watchDirectly(t, time.Hour, false) // counters at the start: only the event reads the action again
	for ordinal := range uuids {
		ev := rec.nth(t, 1, ordinal, healthwatch.KindRecovery)
		assert.Equal(t, healthwatch.Inform, ev.Action, "none at the start")
		assert.Equal(t, healthwatch.RecoveryNone, ev.Recovery)
		assert.Equal(t, 0, ev.Code)
	}
	n := 1
	for _, c := range []struct {
		value    string
		action   healthwatch.Action
		recovery healthwatch.RecoveryAction
	}{
		{"1", healthwatch.Lose, healthwatch.RecoveryResetGPU},
		{"2", healthwatch.Lose, healthwatch.RecoveryRebootNode},
		{"3", healthwatch.Degrade, healthwatch.RecoveryDrain},
		{"4", healthwatch.Lose, healthwatch.RecoveryResetGPU},
		{"5", healthwatch.Lose, healthwatch.RecoveryService},
		{"9", healthwatch.Degrade, healthwatch.RecoveryUnknown},
		{"0", healthwatch.Recover, healthwatch.RecoveryNone},
	} {
		inject(t, "recovery", uuids[1], c.value)
		n++
		ev := rec.nth(t, n, 1, healthwatch.KindRecovery)
		assert.Equal(t, c.action, ev.Action, "value %s", c.value)
		assert.Equal(t, c.recovery, ev.Recovery, "value %s", c.value)
		assert.Equal(t, c.value, fmt.Sprint(ev.Code))
		assert.NotEmpty(t, ev.Message)
		if c.action != healthwatch.Recover && c.action != healthwatch.Inform {
			assert.NotEmpty(t, ev.Hint, "value %s", c.value)
		}
	}
	inject(t, "recovery", uuids[1], "0") // no change: nothing
	inject(t, "recovery", uuids[0], "3") // a barrier: once it is seen, the line before was taken
	rec.nth(t, 2, 0, healthwatch.KindRecovery)
	assert.Len(t, rec.of(1, healthwatch.KindRecovery), n, "an action read again unchanged is not reported again")
}

func TestChildRecoveryOnXid154(t *testing.T) {
	child(t)
	rec, uuids := watchDirectly(t, time.Hour, false)
	rec.nth(t, 1, 0, healthwatch.KindRecovery)
	inject(t, "recovery", uuids[0], "1", "0") // the value changes, with no recovery-action event
	inject(t, "xid", uuids[0], "154")
	ev := rec.nth(t, 2, 0, healthwatch.KindRecovery)
	assert.Equal(t, healthwatch.RecoveryResetGPU, ev.Recovery)
	assert.Equal(t, healthwatch.Lose, ev.Action)
	xids := rec.of(0, healthwatch.KindXid)
	require.Len(t, xids, 1, "the Xid itself is reported too")
	assert.Equal(t, 154, xids[0].Code)
}

func TestChildRecoveryAtStart(t *testing.T) {
	child(t)
	rec, _ := watchDirectly(t, time.Hour, false)
	for ordinal := range 2 {
		ev := rec.nth(t, 1, ordinal, healthwatch.KindRecovery)
		assert.Equal(t, healthwatch.Lose, ev.Action)
		assert.Equal(t, healthwatch.RecoveryRebootNode, ev.Recovery)
		assert.Equal(t, 2, ev.Code)
		assert.Equal(t, "NODE_REBOOT", ev.Name)
	}
}

func TestChildGPUUnavailable(t *testing.T) {
	child(t)
	rec, uuids := watchDirectly(t, time.Hour, false)
	rec.nth(t, 1, 1, healthwatch.KindRecovery)
	inject(t, "unavailable", uuids[1])
	ev := rec.nth(t, 1, 1, healthwatch.KindReset)
	assert.Equal(t, healthwatch.Lose, ev.Action)
	assert.Contains(t, ev.Message, "unavailable")
	assert.Empty(t, rec.of(0, healthwatch.KindReset), "the other device is not touched")
}

// TestChildVerdictsUnsupported: where the driver cannot say, the watch
// watches and reads the counters as before, and reports no recovery action,
// replays or fabric state; with WANT_FIELD_CALLS, it asks for the field once
// per counters read and no more.
func TestChildVerdictsUnsupported(t *testing.T) {
	child(t)
	rec, uuids := watchDirectly(t, afterEachWait, false)
	rec.nth(t, 3, 0, healthwatch.KindCounters)
	inject(t, "recovery", uuids[0], "2") // its event where this NVML has it; the field still cannot say
	inject(t, "xid", uuids[0], "13")
	assert.Equal(t, 13, rec.nth(t, 1, 0, healthwatch.KindXid).Code, "the watch watches")
	// The reads and the field's calls are counted at one instant: the
	// watch reads on meanwhile.
	rec.mu.Lock()
	reads := len(rec.ofLocked(0, healthwatch.KindCounters)) + len(rec.ofLocked(1, healthwatch.KindCounters))
	fieldCalls := rec.countLocked("nvmlDeviceGetFieldValues")
	rec.mu.Unlock()
	assert.Empty(t, rec.of(0, healthwatch.KindRecovery))
	assert.Empty(t, rec.of(1, healthwatch.KindRecovery))
	assert.Empty(t, rec.of(0, healthwatch.KindFabric), "no fabric here")
	if os.Getenv("WANT_FIELD_CALLS") != "" {
		assert.LessOrEqual(t, fieldCalls, reads+3,
			"one field read per counters read, and one for the event: no retry loop")
	} else {
		assert.Empty(t, rec.of(0, healthwatch.KindReplay), "no replay counter in this NVML")
		assert.Nil(t, rec.of(0, healthwatch.KindCounters)[0].Counters.PCIeReplays)
	}
}

func TestChildRemapVerdict(t *testing.T) {
	child(t)
	rec, uuids := watchDirectly(t, afterEachWait, false)
	ev := rec.nth(t, 1, 0, healthwatch.KindRemap)
	assert.Equal(t, healthwatch.Inform, ev.Action, "neither pending nor failed at the start")
	for i, c := range []struct {
		line   []string
		action healthwatch.Action
		name   string
	}{
		{[]string{"remap-pending", uuids[0], "1"}, healthwatch.Degrade, "pending"},
		{[]string{"remap-pending", uuids[0], "0"}, healthwatch.Recover, "none"},
		{[]string{"remap-failed", uuids[0], "1"}, healthwatch.Lose, "failed"},
		{[]string{"remap-pending", uuids[0], "1"}, healthwatch.Lose, "failed"}, // failed wins: no change, no event
		{[]string{"remap-failed", uuids[0], "0"}, healthwatch.Degrade, "pending"},
	} {
		inject(t, c.line...)
		if i == 3 {
			continue
		}
		n := i + 2
		if i > 3 {
			n--
		}
		ev := rec.nth(t, n, 0, healthwatch.KindRemap)
		assert.Equal(t, c.action, ev.Action, "%v", c.line)
		assert.Equal(t, c.name, ev.Name, "%v", c.line)
		if c.action == healthwatch.Degrade || c.action == healthwatch.Lose {
			assert.NotEmpty(t, ev.Hint)
		}
	}
	assert.Len(t, rec.of(1, healthwatch.KindRemap), 1, "the other device: its start alone")
	last := rec.of(0, healthwatch.KindCounters)
	c := last[len(last)-1].Counters
	require.NotNil(t, c.RowRemapsPending)
	assert.True(t, *c.RowRemapsPending, "the counters are kept as before")
}

func TestChildReplays(t *testing.T) {
	child(t)
	rec, uuids := watchDirectly(t, afterEachWait, false)
	ev := rec.nth(t, 1, 1, healthwatch.KindReplay)
	assert.Equal(t, healthwatch.Inform, ev.Action)
	assert.Equal(t, 3, ev.Code)
	inject(t, "replays", uuids[1], "42")
	rec.until(t, "42 replays read", func() bool {
		all := rec.of(1, healthwatch.KindReplay)
		return all[len(all)-1].Code == 42
	})
	reads := rec.of(1, healthwatch.KindCounters)
	require.NotNil(t, reads[len(reads)-1].Counters.PCIeReplays)
	assert.Equal(t, uint64(42), *reads[len(reads)-1].Counters.PCIeReplays)
	assert.GreaterOrEqual(t, len(rec.of(1, healthwatch.KindReplay)), 2, "one at each read, for the rate")
}
