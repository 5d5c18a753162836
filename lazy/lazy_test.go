package lazy

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	trackLockHolder.Store(true) // benchmarks turn it off: see untracked
	m.Run()
}

var errBoom = errors.New("boom")

// callSite returns "file.go:line function" of the line after the caller's, where
// the test puts the Call whose site it expects.
func callSite() string {
	pc, file, line, _ := runtime.Caller(1)
	return fmt.Sprintf("%s:%d %s", filepath.Base(file), line+1, runtime.FuncForPC(pc).Name())
}

// assertNotUnderOwnLock fails if the running goroutine holds i's mutex.
func assertNotUnderOwnLock(t testing.TB, i *Initializer) {
	t.Helper()
	if h := i.holder.Load(); h != 0 && h == currentGoroutineID() {
		t.Errorf("user code runs while its goroutine holds the Initializer's mutex")
	}
}

func TestInitRunsInitOnceForConcurrentCallers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		initErr error
	}{{"success", nil}, {"failure", errBoom}} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			release := make(chan struct{})
			i := New(func(context.Context) error {
				runs.Add(1)
				<-release
				return tc.initErr
			})
			const callers = 64
			errs := make([]error, callers)
			var wg sync.WaitGroup
			for k := range callers {
				wg.Go(func() { errs[k] = i.Init(context.Background()) })
			}
			require.Eventually(t, func() bool { return i.State() == Initializing }, 5*time.Second, time.Millisecond)
			close(release)
			wg.Wait()
			assert.Equal(t, int32(1), runs.Load())
			for _, err := range errs {
				assert.True(t, err == errs[0], "every caller gets the same memoized error")
				assert.ErrorIs(t, err, tc.initErr)
			}
			assert.True(t, errs[0] == i.Init(context.Background()))
			assert.Equal(t, int32(1), runs.Load(), "nothing is retried")
		})
	}
}

func TestInitCallerWhoseContextEndsReturnsWhileInitGoesOn(t *testing.T) {
	release := make(chan struct{})
	var runs atomic.Int32
	i := New(func(ctx context.Context) error {
		runs.Add(1)
		<-release
		return ctx.Err() // not cancelled: the first caller's cancellation does not reach init
	})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error)
	go func() { got <- i.Init(ctx) }()
	require.Eventually(t, func() bool { return runs.Load() == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	select {
	case err := <-got:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("Init did not return when its context was cancelled")
	}
	assert.Equal(t, Initializing, i.State())
	close(release)
	require.NoError(t, i.Init(context.Background()))
	assert.Equal(t, Ready, i.State())
	assert.Equal(t, int32(1), runs.Load())
}

func TestInitWithDoneContextStartsNothing(t *testing.T) {
	var runs atomic.Int32
	i := New(func(context.Context) error { runs.Add(1); return nil })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, i.Init(ctx), context.Canceled)
	assert.Equal(t, Uninitialized, i.State())
	require.NoError(t, i.Init(context.Background()))
	assert.Equal(t, int32(1), runs.Load())
}

func TestQueuedCallsRunOnceInCallOrderBeforeInitReturns(t *testing.T) {
	var order []string
	var mu sync.Mutex
	record := func(s string) Func {
		return func(context.Context) error { mu.Lock(); order = append(order, s); mu.Unlock(); return nil }
	}
	i := New(record("init"))
	ctx := context.Background()
	for k := range 5 {
		require.NoError(t, i.Call(ctx, record(fmt.Sprint("call", k))))
	}
	assert.Empty(t, order, "Call never starts initialization")
	assert.Equal(t, Uninitialized, i.State())
	require.NoError(t, i.Init(ctx))
	assert.Equal(t, []string{"init", "call0", "call1", "call2", "call3", "call4"}, order)
	require.NoError(t, i.Init(ctx))
	assert.Len(t, order, 6, "nothing runs twice")
}

func TestCallOnReadyRunsOnCallerWithoutLockOrAllocation(t *testing.T) {
	i := New(nil)
	require.NoError(t, i.Init(context.Background()))
	caller := currentGoroutineID()
	err := i.Call(context.Background(), func(context.Context) error {
		assert.Equal(t, caller, currentGoroutineID(), "runs on the caller's goroutine")
		assertNotUnderOwnLock(t, i)
		return errBoom
	})
	assert.Equal(t, errBoom, err, "returns fn's error")

	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() { _ = i.Call(ctx, noopFunc) })
	assert.Zero(t, allocs)
}

func noop(context.Context) error { return nil }

var noopFunc Func = noop

func TestNoUserCodeRunsUnderTheMutex(t *testing.T) {
	var i *Initializer
	checked := 0
	check := func(context.Context) error {
		checked++
		// The invariant itself: the goroutine that runs user code does not
		// hold the mutex. Whether the mutex is free is another matter: the
		// initialization goroutine may hold it for its own bookkeeping
		// (storing Ready, say) while this callback runs on another goroutine.
		assertNotUnderOwnLock(t, i)
		return nil
	}
	i = New(check)
	ctx := context.Background()
	require.NoError(t, i.Call(ctx, check)) // queued: runs during the drain
	require.NoError(t, i.Call(ctx, check))
	require.NoError(t, i.Init(ctx))
	require.NoError(t, i.Call(ctx, check)) // ready path
	assert.Equal(t, 4, checked)
}

func TestCallRunsNowWhenInitFinishesBetweenItsChecks(t *testing.T) {
	i := New(nil)
	testHookBeforeLock = func() {
		testHookBeforeLock = nil
		require.NoError(t, i.Init(context.Background()))
	}
	t.Cleanup(func() { testHookBeforeLock = nil })
	var runs atomic.Int32
	caller := currentGoroutineID()
	err := i.Call(context.Background(), func(context.Context) error {
		runs.Add(1)
		assert.Equal(t, caller, currentGoroutineID())
		assertNotUnderOwnLock(t, i)
		return errBoom
	})
	assert.Equal(t, errBoom, err, "run now, not queued into a queue that is already drained")
	assert.Equal(t, int32(1), runs.Load())
}

func TestCallFromAnotherGoroutineDuringDrainIsNotLost(t *testing.T) {
	i := New(nil)
	var late atomic.Int32
	ctx := context.Background()
	require.NoError(t, i.Call(ctx, func(context.Context) error {
		// A foreign goroutine with a foreign context: not re-entrant, so its
		// Call is queued behind this one and must run before Init returns.
		done := make(chan error)
		go func() {
			done <- i.Call(context.Background(), func(context.Context) error { late.Add(1); return nil })
		}()
		return <-done
	}))
	require.NoError(t, i.Init(ctx))
	assert.Equal(t, int32(1), late.Load())
}

func TestFailureIsMemoizedAndExplained(t *testing.T) {
	exitGoroutine := func(context.Context) error { runtime.Goexit(); return nil }
	panicking := func(context.Context) error { panic(errBoom) }
	failing := func(context.Context) error { return errBoom }
	for _, tc := range []struct {
		name    string
		inInit  bool
		fail    Func
		wantErr error
		panics  bool
	}{
		{"init returns an error", true, failing, errBoom, false},
		{"init panics", true, panicking, errBoom, true},
		{"init calls Goexit", true, exitGoroutine, ErrGoexit, false},
		{"queued call returns an error", false, failing, errBoom, false},
		{"queued call panics", false, panicking, errBoom, true},
		{"queued call calls Goexit", false, exitGoroutine, ErrGoexit, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var initRuns, before, after atomic.Int32
			init := func(context.Context) error { initRuns.Add(1); return nil }
			if tc.inInit {
				init = func(ctx context.Context) error { initRuns.Add(1); return tc.fail(ctx) }
			}
			i := New(init)
			ctx := context.Background()
			var failSite string
			if !tc.inInit {
				require.NoError(t, i.Call(ctx, func(context.Context) error { before.Add(1); return nil }))
				failSite = callSite()
				require.NoError(t, i.Call(ctx, tc.fail))
			}
			afterSite := callSite()
			require.NoError(t, i.Call(ctx, func(context.Context) error { after.Add(1); return nil }))

			err := i.Init(ctx)
			require.ErrorIs(t, err, tc.wantErr)
			assert.Equal(t, Failed, i.State())
			assert.Zero(t, after.Load(), "work queued after the failure never runs")
			if tc.inInit {
				var ie *InitError
				require.ErrorAs(t, err, &ie)
				assert.Equal(t, []string{afterSite}, ie.NotRun)
				assert.Zero(t, before.Load())
			} else {
				var de *DeferredError
				require.ErrorAs(t, err, &de)
				assert.Equal(t, failSite, de.Site)
				assert.Equal(t, []string{afterSite}, de.NotRun)
				assert.Contains(t, err.Error(), failSite)
				assert.Equal(t, int32(1), before.Load())
			}
			assert.Contains(t, err.Error(), afterSite)
			var pe *PanicError
			if assert.Equal(t, tc.panics, errors.As(err, &pe), "a panic is reported as *PanicError") && tc.panics {
				assert.Equal(t, errBoom, pe.Value)
				assert.Contains(t, string(pe.Stack), "lazy_test.go")
			}

			// Memoized: later calls get the same error, nothing runs or reruns.
			assert.True(t, err == i.Init(ctx), "Init returns the memoized error")
			ran := false
			callErr := i.Call(ctx, func(context.Context) error { ran = true; return nil })
			assert.ErrorIs(t, callErr, tc.wantErr)
			assert.ErrorIs(t, callErr, err)
			assert.False(t, ran)
			assert.Equal(t, int32(1), initRuns.Load())
			assert.LessOrEqual(t, before.Load(), int32(1))
		})
	}
}

func TestPanicErrorKeepsValueAndStack(t *testing.T) {
	i := New(func(context.Context) error { panic("driver exploded") })
	err := i.Init(context.Background())
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "driver exploded", pe.Value)
	assert.Contains(t, string(pe.Stack), "TestPanicErrorKeepsValueAndStack")
	assert.Contains(t, err.Error(), "panic: driver exploded")
}

func TestZeroInitializerReplaysQueue(t *testing.T) {
	var i Initializer
	ran := 0
	require.NoError(t, i.Call(context.Background(), func(context.Context) error { ran++; return nil }))
	require.NoError(t, i.Init(context.Background()))
	assert.Equal(t, 1, ran)
	assert.Equal(t, Ready, i.State())
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{
		Uninitialized: "uninitialized", Initializing: "initializing",
		Ready: "ready", Failed: "failed", State(9): "State(9)",
	} {
		assert.Equal(t, want, s.String())
	}
}

func TestCallWithNilFuncPanicsTheSameBeforeAndAfterInit(t *testing.T) {
	const want = "lazy: Call with nil Func"
	i := New(nil)
	ctx := context.Background()
	assert.PanicsWithValue(t, want, func() { _ = i.Call(ctx, nil) }, "before init")
	require.NoError(t, i.Init(ctx))
	assert.PanicsWithValue(t, want, func() { _ = i.Call(ctx, nil) }, "on the ready path")
	assert.PanicsWithValue(t, want, func() { _ = i.CallDepth(ctx, 1, nil) }, "CallDepth on the ready path")
}

func TestCallFromAGoStatementRecordsTheGoStatement(t *testing.T) {
	i := New(func(context.Context) error { return errBoom })
	ctx := context.Background()
	_, file, line, _ := runtime.Caller(0)
	go i.Call(ctx, noop) //nolint:errcheck // the go statement under test
	require.Eventually(t, func() bool {
		i.mu.Lock()
		defer i.mu.Unlock()
		return len(i.queue) == 1
	}, 5*time.Second, time.Millisecond)
	var ie *InitError
	require.ErrorAs(t, i.Init(ctx), &ie)
	require.Len(t, ie.NotRun, 1)
	want := fmt.Sprintf("%s:%d go statement in %s", filepath.Base(file), line+1, "github.com/gpuinit/gpuinit/lazy.TestCallFromAGoStatementRecordsTheGoStatement")
	assert.Equal(t, want, ie.NotRun[0], "not runtime.goexit")
}

func TestRunningNamesWhatTheInitializationRunsNow(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	i := New(func(context.Context) error { close(entered); <-release; return nil })
	_, _, ok := i.Running()
	assert.False(t, ok, "nothing runs before Init")
	queuedRelease := make(chan struct{})
	queuedEntered := make(chan struct{})
	site := callSite()
	require.NoError(t, i.Call(context.Background(), func(context.Context) error { close(queuedEntered); <-queuedRelease; return nil }))
	done := make(chan error)
	go func() { done <- i.Init(context.Background()) }()
	<-entered
	what, since, ok := i.Running()
	assert.True(t, ok)
	assert.Equal(t, "init", what)
	assert.WithinDuration(t, time.Now(), since, 5*time.Second)
	close(release)
	<-queuedEntered
	what, _, ok = i.Running()
	assert.True(t, ok)
	assert.Equal(t, site, what, "a queued function is named by its call site")
	close(queuedRelease)
	require.NoError(t, <-done)
	_, _, ok = i.Running()
	assert.False(t, ok)

	exits := New(func(context.Context) error { runtime.Goexit(); return nil })
	require.ErrorIs(t, exits.Init(context.Background()), ErrGoexit)
	_, _, ok = exits.Running()
	assert.False(t, ok, "nothing runs once init called Goexit")
}

func TestStartBeginsWithoutWaiting(t *testing.T) {
	release := make(chan struct{})
	var inner error
	var i *Initializer
	i = New(func(ctx context.Context) error {
		inner = i.Start(ctx) // re-entrant: under way, so nil
		<-release
		return nil
	})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	err := i.Start(cancelled)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, "initialization not started")
	assert.Equal(t, Uninitialized, i.State(), "a done ctx starts nothing")

	require.NoError(t, i.Start(context.Background()))
	assert.Equal(t, Initializing, i.State(), "Start returned while init runs")
	require.NoError(t, i.Start(cancelled), "under way: nil, whatever ctx")
	close(release)
	require.NoError(t, i.Init(context.Background()))
	assert.NoError(t, inner)
	assert.NoError(t, i.Start(context.Background()), "finished: nil")
	assert.PanicsWithValue(t, "lazy: Start called with a nil Context; use context.Background() or context.TODO()", func() {
		//lint:ignore SA1012 a nil Context is the case under test
		_ = i.Start(nil)
	})
}
