package lazy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/hangcheck"
	"github.com/gpuinit/gpuinit/internal/legacy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The re-entry scenarios can deadlock by nature, so each runs in a child process
// (this test binary, re-executed) under hangcheck's timeout.
const (
	envScenario   = "GPUINIT_LAZY_TEST_SCENARIO"
	envDiscipline = "GPUINIT_LAZY_TEST_DISCIPLINE"
)

// initCaller is what both disciplines offer.
type initCaller interface {
	Init(ctx context.Context) error
	Call(ctx context.Context, fn Func) error
}

type legacyCaller struct{ *legacy.Initializer }

func (l legacyCaller) Call(ctx context.Context, fn Func) error { return l.Initializer.Call(ctx, fn) }

func newCaller(discipline string, init Func) initCaller {
	if discipline == "legacy" {
		return legacyCaller{legacy.New(init)}
	}
	return New(init)
}

// passOn returns the context a callback hands to a re-entrant call: its own,
// or a foreign one.
func passOn(ctx context.Context, propagate bool) context.Context {
	if propagate {
		return ctx
	}
	return context.Background()
}

// scenario runs against a fresh initCaller made by mk and returns an error if the
// outcome is wrong. A deadlock shows as the child never exiting.
type scenario func(mk func(init Func) initCaller) error

func reentryScenarios() map[string]scenario {
	s := map[string]scenario{}
	for _, propagate := range []bool{true, false} {
		suffix := map[bool]string{true: "/ctx", false: "/background"}[propagate]

		// PyTorch's path (a): after init, a callback re-enters Call.
		s["initialized/call"+suffix] = func(mk func(Func) initCaller) error {
			i := mk(nil)
			ctx := context.Background()
			if err := i.Init(ctx); err != nil {
				return err
			}
			var inner atomic.Int32
			err := i.Call(ctx, func(ctx context.Context) error {
				return i.Call(passOn(ctx, propagate), func(context.Context) error { inner.Add(1); return nil })
			})
			return expect(err, nil, inner.Load() == 1, "inner call ran once")
		}
		// PyTorch's path (b): before init, a queued callback re-enters Call during the drain.
		s["queued/call"+suffix] = func(mk func(Func) initCaller) error {
			i := mk(nil)
			ctx := context.Background()
			var inner atomic.Int32
			if err := i.Call(ctx, func(ctx context.Context) error {
				err := i.Call(passOn(ctx, propagate), func(context.Context) error { inner.Add(1); return nil })
				if inner.Load() != 1 {
					return errors.New("re-entrant Call during the drain did not run at once")
				}
				return err
			}); err != nil {
				return err
			}
			return expect(i.Init(ctx), nil, inner.Load() == 1, "inner call ran once")
		}
		s["queued/init-from-callback"+suffix] = func(mk func(Func) initCaller) error {
			i := mk(nil)
			ctx := context.Background()
			var reentrant error = errors.New("callback did not run")
			_ = i.Call(ctx, func(ctx context.Context) error { reentrant = i.Init(passOn(ctx, propagate)); return nil })
			return expect(i.Init(ctx), nil, reentrant == nil, fmt.Sprintf("re-entrant Init returned %v", reentrant))
		}
		s["initialized/init-from-callback"+suffix] = func(mk func(Func) initCaller) error {
			i := mk(nil)
			ctx := context.Background()
			if err := i.Init(ctx); err != nil {
				return err
			}
			return i.Call(ctx, func(ctx context.Context) error { return i.Init(passOn(ctx, propagate)) })
		}
		s["init/init-from-init"+suffix] = func(mk func(Func) initCaller) error {
			var i initCaller
			var reentrant error
			i = mk(func(ctx context.Context) error { reentrant = i.Init(passOn(ctx, propagate)); return nil })
			err := i.Init(context.Background())
			return expect(err, nil, errors.Is(reentrant, ErrReentrantInit), fmt.Sprintf("Init from init returned %v", reentrant))
		}
		s["init/call-from-init"+suffix] = func(mk func(Func) initCaller) error {
			var i initCaller
			var inner atomic.Int32
			i = mk(func(ctx context.Context) error {
				err := i.Call(passOn(ctx, propagate), func(context.Context) error { inner.Add(1); return nil })
				return expect(err, nil, inner.Load() == 1, "Call from init ran at once")
			})
			return i.Init(context.Background())
		}
	}
	// A callback that starts a goroutine with its ctx: that goroutine is part of
	// the initialization, so its Call runs at once and its Init returns.
	s["queued/goroutine-with-ctx"] = func(mk func(Func) initCaller) error {
		i := mk(nil)
		ctx := context.Background()
		var inner atomic.Int32
		_ = i.Call(ctx, func(ctx context.Context) error {
			done := make(chan error)
			go func() {
				err := i.Call(ctx, func(context.Context) error { inner.Add(1); return nil })
				if err == nil {
					err = i.Init(ctx)
				}
				done <- err
			}()
			return expect(<-done, nil, inner.Load() == 1, "goroutine's Call ran at once")
		})
		return i.Init(ctx)
	}
	// A callback that waits for another goroutine's Call, made with a foreign
	// context: before init that Call is queued, after it runs at once; it never
	// waits for the callback.
	for _, initialized := range []bool{false, true} {
		name := map[bool]string{false: "queued", true: "initialized"}[initialized]
		s[name+"/wait-for-other-goroutine"] = func(mk func(Func) initCaller) error {
			i := mk(nil)
			ctx := context.Background()
			if initialized {
				if err := i.Init(ctx); err != nil {
					return err
				}
			}
			var inner atomic.Int32
			err := i.Call(ctx, func(context.Context) error {
				done := make(chan error)
				go func() {
					done <- i.Call(context.Background(), func(context.Context) error { inner.Add(1); return nil })
				}()
				return <-done
			})
			if err != nil {
				return err
			}
			return expect(i.Init(ctx), nil, inner.Load() == 1, "other goroutine's call ran once")
		}
	}
	return s
}

func expect(err, want error, ok bool, what string) error {
	if !errors.Is(err, want) {
		return fmt.Errorf("got error %v, want %v", err, want)
	}
	if !ok {
		return errors.New("wrong outcome: " + what)
	}
	return nil
}

// children marks this test binary re-executed to run one scenario.
const children = childtest.Marker("GPUINIT_LAZY_TEST_CHILD")

// TestChildScenario runs, in a child, the scenario envScenario names against
// the discipline envDiscipline names.
func TestChildScenario(t *testing.T) {
	children.Child(t)
	name := os.Getenv(envScenario)
	sc, ok := reentryScenarios()[name]
	if door, isDoor := doorScenarios()[name]; isDoor {
		sc, ok = func(func(Func) initCaller) error { return door() }, true
	}
	if own, isOwn := processScenarios()[name]; isOwn {
		sc, ok = func(func(Func) initCaller) error { return own() }, true
	}
	require.True(t, ok, "unknown scenario %q", name)
	discipline := os.Getenv(envDiscipline)
	if err := sc(func(init Func) initCaller { return newCaller(discipline, init) }); err != nil {
		t.Fatal("scenario failed:", err)
	}
}

func runScenario(t *testing.T, name, discipline string, timeout time.Duration) hangcheck.Result {
	t.Helper()
	return children.Exec(t, "TestChildScenario", timeout, envScenario+"="+name, envDiscipline+"="+discipline)
}

func scenarioNames() []string {
	var names []string
	for n := range reentryScenarios() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// runAll runs every scenario's child at once: they mostly sleep or hang, so
// running them side by side keeps the test short on two cores.
func runAll(t *testing.T, discipline string, timeout time.Duration) map[string]hangcheck.Result {
	t.Helper()
	return runEach(t, scenarioNames(), discipline, timeout)
}

func runEach(t *testing.T, names []string, discipline string, timeout time.Duration) map[string]hangcheck.Result {
	t.Helper()
	results := make([]hangcheck.Result, len(names))
	var wg sync.WaitGroup
	for k, name := range names {
		wg.Go(func() { results[k] = runScenario(t, name, discipline, timeout) })
	}
	wg.Wait()
	byName := map[string]hangcheck.Result{}
	for k, name := range names {
		byName[name] = results[k]
	}
	return byName
}

func TestReentryNeverDeadlocks(t *testing.T) {
	for name, r := range runAll(t, "fixed", 60*time.Second) {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, hangcheck.OK, r.Verdict, "stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
		})
	}
}

// TestHarnessCatchesPreFixHang shows that the harness above would see a hang:
// the same scenarios against the pre-fix discipline all hang, and the child's
// goroutine dump shows the lock they wait for.
func TestHarnessCatchesPreFixHang(t *testing.T) {
	// 500 ms from each child's armed line (childtest): its scenario deadlocks
	// at once, so it is in the lock by then; its dump is waited for whole.
	for name, r := range runAll(t, "legacy", 500*time.Millisecond) {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, hangcheck.Hang, r.Verdict, "stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
			stuck := hangcheck.Goroutines(r.Stderr, 12, "internal/legacy")
			assert.Contains(t, stuck, "sync.(*Mutex).Lock")
			assert.True(t, strings.Contains(stuck, "legacy.(*Initializer).Call") ||
				strings.Contains(stuck, "legacy.(*Initializer).Init"), stuck)
		})
	}
}
