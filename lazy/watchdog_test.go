package lazy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/internal/hangcheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for the watchdog's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// workUntil returns a function that runs until done reports true, or ten
// seconds pass: work that is slow by as long as the watchdog needs to be
// scheduled, rather than by a fixed sleep that a loaded machine can outlast.
func workUntil(done func() bool) func(context.Context) error {
	return func(context.Context) error {
		for deadline := time.Now().Add(10 * time.Second); !done() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		return nil
	}
}

func (s *syncBuffer) records(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		out = append(out, r)
	}
	return out
}

// TestWatchdogWarnsOncePerSlowFunction runs in a synctest bubble, so that the
// slow functions' sleeps and the watchdog's timer share one fake clock: the
// watchdog fires at its threshold, however loaded the machine.
func TestWatchdogWarnsOncePerSlowFunction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const threshold = 50 * time.Millisecond
		slow := func(context.Context) error { time.Sleep(8 * threshold); return nil }
		var buf syncBuffer
		i := New(slow, WithWatchdog(threshold), WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
		ctx := context.Background()
		require.NoError(t, i.Call(ctx, func(context.Context) error { return nil })) // fast: no warning
		site := callSite()
		require.NoError(t, i.Call(ctx, slow))
		require.NoError(t, i.Init(ctx))

		recs := buf.records(t)
		require.Len(t, recs, 2, "one warning for init, one for the slow queued call")
		for k, want := range []struct{ phase, site string }{{"init", "init"}, {"queued call", site}} {
			r := recs[k]
			assert.Equal(t, "WARN", r["level"])
			assert.Equal(t, want.phase, r["phase"])
			assert.Equal(t, want.site, r["site"])
			assert.GreaterOrEqual(t, r["elapsed"], float64(threshold))
			assert.Contains(t, r["goroutines"], "goroutine ")
			assert.Contains(t, r["goroutines"], "TestWatchdogWarnsOncePerSlowFunction")
		}
	})
}

func TestWatchdogZeroDisables(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []Option
		warnings int
	}{
		{"a short threshold warns", []Option{WithWatchdog(5 * time.Millisecond)}, 1},
		{"zero after it disables", []Option{WithWatchdog(5 * time.Millisecond), WithWatchdog(0)}, 0},
		{"negative disables", []Option{WithWatchdog(-time.Second)}, 0},
	} {
		// In a synctest bubble the 60 ms of work and the watchdog's timer
		// share one fake clock, so a watchdog left on fires within it
		// however loaded the machine: a disabled one's silence means
		// something.
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var buf syncBuffer
				opts := append(tc.opts, WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
				i := New(func(context.Context) error { time.Sleep(60 * time.Millisecond); return nil }, opts...)
				require.NoError(t, i.Init(context.Background()))
				assert.Len(t, buf.records(t), tc.warnings)
			})
		})
	}
}

// panickingHandler is a slog.Handler whose Handle counts its calls, then
// panics.
type panickingHandler struct {
	slog.Handler
	calls *atomic.Int32
}

func (panickingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h panickingHandler) Handle(context.Context, slog.Record) error {
	h.calls.Add(1)
	panic("handler exploded")
}

// blockingHandler is a slog.Handler whose Handle waits until release closes.
type blockingHandler struct {
	slog.Handler
	entered chan struct{}
	release chan struct{}
}

func (blockingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h blockingHandler) Handle(context.Context, slog.Record) error {
	close(h.entered)
	<-h.release
	return nil
}

func TestWatchdogLoggerThatPanicsIsRecoveredAndReportedOnce(t *testing.T) {
	var reports syncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&reports, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	var calls atomic.Int32
	// Init runs the init function, then the queued call: each lasts until
	// the watchdog's warning for it has reached the handler.
	slowUntil := func(n int32) func(context.Context) error {
		return workUntil(func() bool { return calls.Load() >= n })
	}
	i := New(slowUntil(1), WithWatchdog(10*time.Millisecond), WithLogger(slog.New(panickingHandler{calls: &calls})))
	ctx := context.Background()
	require.NoError(t, i.Call(ctx, slowUntil(2))) // a second slow function: a second panic
	require.NoError(t, i.Init(ctx), "the process survives and Init succeeds")
	// The report is written on the timer's goroutine, after the panic that
	// let the slow function end: it may still be on its way.
	require.Eventually(t, func() bool { return reports.len() > 0 }, 10*time.Second, time.Millisecond, "the panic is reported")
	recs := reports.records(t)
	assert.Equal(t, int32(2), calls.Load(), "the handler panicked for each slow function")
	require.Len(t, recs, 1, "reported once")
	assert.Equal(t, "ERROR", recs[0]["level"])
	assert.Contains(t, recs[0]["msg"], "handler exploded")
}

func TestWatchdogNeverMakesInitWaitForALogWrite(t *testing.T) {
	h := blockingHandler{entered: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(h.release) }) // the blocked write ends with the test
	entered := func() bool {
		select {
		case <-h.entered:
			return true
		default:
			return false
		}
	}
	i := New(workUntil(entered), WithWatchdog(10*time.Millisecond), WithLogger(slog.New(h)))
	done := make(chan error, 1)
	go func() { done <- i.Init(context.Background()) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Init waited for the blocked log write")
	}
	require.True(t, entered(), "the watchdog never wrote its warning, so the test shows nothing")
}

func TestWatchdogDefaultThreshold(t *testing.T) {
	assert.Equal(t, DefaultWatchdog, (&options{}).threshold())
	var o options
	WithWatchdog(-time.Second)(&o)
	assert.Zero(t, o.threshold())
}

// processScenarios change what the whole process shares (slog's default, its
// stderr), so they run in a child of their own.
func processScenarios() map[string]func() error {
	return map[string]func() error{
		"watchdog/default-logger-panics": func() error {
			var calls atomic.Int32
			slog.SetDefault(slog.New(panickingHandler{calls: &calls}))
			// The report goes to stderr on the timer's goroutine, after the
			// panic: read stderr through a pipe, and let init finish only
			// once the report has come through it.
			reported, restore, err := watchStderr("lazy: the watchdog's logger panicked")
			if err != nil {
				return err
			}
			defer restore()
			i := New(func(context.Context) error { <-reported; return nil }, WithWatchdog(10*time.Millisecond))
			return i.Init(context.Background())
		},
	}
}

// watchStderr points os.Stderr at a pipe whose lines are copied to the real
// stderr, and returns a channel closed once a line containing marker has been
// copied; restore puts os.Stderr back and waits for the copy to finish.
func watchStderr(marker string) (seen <-chan struct{}, restore func(), err error) {
	real := os.Stderr
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	os.Stderr = w
	found, copied := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(copied)
		var once sync.Once
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			fmt.Fprintln(real, sc.Text())
			if strings.Contains(sc.Text(), marker) {
				once.Do(func() { close(found) })
			}
		}
	}()
	return found, func() {
		os.Stderr = real
		w.Close()
		<-copied
	}, nil
}

// TestWatchdogReportsAPanicOfTheDefaultLoggerOnStderr: when the logger that
// panicked is slog.Default itself, there is no logger left to report through,
// so the report goes to stderr, once.
func TestWatchdogReportsAPanicOfTheDefaultLoggerOnStderr(t *testing.T) {
	r := runScenario(t, "watchdog/default-logger-panics", "fixed", 30*time.Second)
	require.Equal(t, hangcheck.OK, r.Verdict, "stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	assert.Equal(t, 1, strings.Count(r.Stderr, "lazy: the watchdog's logger panicked"), "stderr:\n%s", r.Stderr)
	assert.Contains(t, r.Stderr, "handler exploded")
}

// recordingHandler is a slog.Handler that keeps each record it handles.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

func (h *recordingHandler) all() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.records)
}

// TestWatchdogWarningIsOneShortLineWithTheStacksInOneAttribute: the
// warning's message is one short line, and the stacks, the only long or
// multi-line value, are one attribute under StacksKey: a handler that drops
// that key writes the warning as one short line.
func TestWatchdogWarningIsOneShortLineWithTheStacksInOneAttribute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const threshold = time.Second
		slow := func(context.Context) error { time.Sleep(2 * threshold); return nil }
		rec := &recordingHandler{}
		var text syncBuffer
		dropStacks := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == StacksKey {
				return slog.Attr{}
			}
			return a
		}}
		i := New(slow, WithWatchdog(threshold), WithLogger(slog.New(slog.NewMultiHandler(rec, slog.NewTextHandler(&text, dropStacks)))))
		require.NoError(t, i.Init(context.Background()))

		records := rec.all()
		require.Len(t, records, 1)
		r := records[0]
		assert.Equal(t, slog.LevelWarn, r.Level)
		assert.NotContains(t, r.Message, "\n")
		assert.LessOrEqual(t, len(r.Message), 64, "a short message: %q", r.Message)
		var long []string
		r.Attrs(func(a slog.Attr) bool {
			if v := a.Value.String(); strings.Contains(v, "\n") || len(v) > 200 {
				long = append(long, a.Key)
			}
			if a.Key == StacksKey {
				assert.Contains(t, a.Value.String(), "TestWatchdogWarningIsOneShortLineWithTheStacksInOneAttribute")
			}
			return true
		})
		assert.Equal(t, []string{StacksKey}, long, "the stacks are the only long attribute")

		text.mu.Lock()
		line := strings.TrimSuffix(text.b.String(), "\n")
		text.mu.Unlock()
		assert.NotContains(t, line, "\n", "one line")
		assert.Less(t, len(line), 300, "without the stacks the line is short: %s", line)
		assert.Contains(t, line, "phase=init")
	})
}

// TestATimerThatFiresAtOnceFindsItself: where the threshold is short and
// the machine busy, the watchdog's timer fires before time.AfterFunc has
// returned it. Its check must then wait for the timer to be set, not re-arm
// a nil one (a nil-pointer panic, and a data race under -race, seen under
// four busy loops). The timer here fires as soon as it exists: the check
// starts before AfterFunc returns, and re-arms the timer it finds.
func TestATimerThatFiresAtOnceFindsItself(t *testing.T) {
	fired := make(chan struct{}, 1)
	checked := make(chan struct{})
	afterFunc = func(d time.Duration, f func()) *time.Timer {
		t := time.AfterFunc(time.Hour, func() {})
		go func() {
			fired <- struct{}{}
			defer close(checked)
			f()
		}()
		<-fired // the check has started, as a timer of 0 would have it
		return t
	}
	defer func() { afterFunc = time.AfterFunc }()
	var running atomic.Pointer[entry]
	w := newWatchdog(&options{watchdog: time.Nanosecond, watchdogSet: true}, &running)
	<-checked
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.True(t, w.stopped)
}
