package lazy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stressRun drives one Initializer with goroutines doing random operations, then
// checks that every queued or immediate function ran at most once (exactly once
// unless the initialization failed), that each goroutine's functions ran in the
// order it made its calls, and that none ran under its goroutine's lock.
//
// With hostile set, each goroutine's own Init and Call go through a
// hostileContext whose Err and Value re-enter the Initializer (queueing
// functions that must run exactly once too), and whose Done closes at a random
// moment. Nothing may hang.
func stressRun(t *testing.T, seed uint64, goroutines, ops int, failure string, hostile bool) {
	t.Helper()
	var i *Initializer
	var ran sync.Map // id -> *atomic.Int32
	var lastRun [64]atomic.Int64
	var orderErr atomic.Value
	var spawned sync.WaitGroup   // goroutines started from callbacks
	var failedAtOnce atomic.Bool // the failing function ran on a Ready Initializer

	// fnFor returns a function that records that (g, seq) ran and checks order.
	fnFor := func(g int, seq int64, body Func) Func {
		var c atomic.Int32
		ran.Store(fmt.Sprint(g, "/", seq), &c)
		return func(ctx context.Context) error {
			assertNotUnderOwnLock(t, i)
			if c.Add(1) != 1 {
				t.Errorf("function %d/%d ran twice", g, seq)
			}
			if prev := lastRun[g].Swap(seq); prev >= seq {
				orderErr.CompareAndSwap(nil, fmt.Sprintf("goroutine %d: call %d ran after call %d", g, seq, prev))
			}
			if body != nil {
				return body(ctx)
			}
			return nil
		}
	}
	i = New(func(ctx context.Context) error {
		assertNotUnderOwnLock(t, i)
		runtime.Gosched()
		if failure == "init" {
			return errBoom
		}
		return nil
	}, WithWatchdog(0))

	var wg sync.WaitGroup
	for g := range goroutines {
		lastRun[g].Store(-1)
		lastRun[goroutines+g].Store(-1)
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			var ctx context.Context = context.Background()
			cancelAt, cancel := int64(-1), context.CancelFunc(func() {})
			if hostile {
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
				cancelAt = r.Int64N(int64(ops))
				var reentries atomic.Int64
				ctx = &hostileContext{Context: ctx, reenter: func() {
					if n := reentries.Add(1); n%7 == 0 {
						_ = i.Call(context.Background(), fnFor(goroutines+g, n, nil))
					}
					_ = i.State()
				}}
			}
			initAt := r.Int64N(int64(ops)) // each goroutine calls Init once, somewhere
			for seq := range int64(ops) {
				if seq == cancelAt {
					cancel()
				}
				if seq == initAt {
					_ = i.Init(ctx)
				}
				var body Func
				switch r.IntN(10) {
				case 1: // re-entrant Call with the callback's ctx
					body = func(ctx context.Context) error {
						return i.Call(ctx, func(context.Context) error { assertNotUnderOwnLock(t, i); return nil })
					}
				case 2: // re-entrant Call with a foreign ctx
					body = func(context.Context) error {
						return i.Call(context.Background(), func(context.Context) error { return nil })
					}
				case 3: // re-entrant Init
					body = func(ctx context.Context) error {
						if err := i.Init(ctx); err != nil && i.State() != Failed {
							return fmt.Errorf("re-entrant Init: %w", err)
						}
						return nil
					}
				case 4: // a goroutine started from the callback, with its ctx
					body = func(ctx context.Context) error {
						spawned.Add(1)
						go func() {
							defer spawned.Done()
							_ = i.Call(ctx, func(context.Context) error { return nil })
						}()
						return nil
					}
				}
				failHere := g == 0 && seq == int64(ops)/100
				switch {
				case failHere && failure == "callback":
					body = func(context.Context) error { return errBoom }
				case failHere && failure == "panic":
					body = func(context.Context) error { panic(errBoom) }
				}
				func() {
					defer func() {
						if v := recover(); v != nil { // the panicking function ran at once
							failedAtOnce.Store(true)
						}
					}()
					if err := i.Call(ctx, fnFor(g, seq, body)); failHere && errors.Is(err, errBoom) {
						failedAtOnce.Store(true)
					}
				}()
			}
		})
	}
	wg.Wait()
	err := i.Init(context.Background())
	spawned.Wait()
	if o := orderErr.Load(); o != nil {
		t.Error(o)
	}

	switch failure {
	case "":
		require.NoError(t, err)
		ran.Range(func(k, v any) bool {
			if v.(*atomic.Int32).Load() != 1 {
				t.Errorf("function %v ran %d times, want once", k, v.(*atomic.Int32).Load())
				return false
			}
			return true
		})
	case "init":
		require.ErrorIs(t, err, errBoom)
	default:
		if failedAtOnce.Load() { // it ran eagerly and failed its own Call
			require.NoError(t, err)
			return
		}
		var de *DeferredError
		require.ErrorAs(t, err, &de)
		require.ErrorIs(t, err, errBoom)
		assert.Contains(t, de.Site, "stress_test.go")
	}
}

// hostileContext is a Context whose Err and Value call reenter first: a
// request context that logs, or checks GPU state, through the Initializer.
type hostileContext struct {
	context.Context
	reenter func()
}

func (h *hostileContext) Err() error {
	h.reenter()
	return h.Context.Err()
}

func (h *hostileContext) Value(key any) any {
	h.reenter()
	return h.Context.Value(key)
}

func TestStress(t *testing.T) {
	before := runtime.NumGoroutine()
	// The runs are independent, and side by side they use both cores of a
	// small machine; the group returns once every run has.
	t.Run("runs", func(t *testing.T) {
		for _, hostile := range []bool{false, true} {
			for _, failure := range []string{"", "init", "callback", "panic"} {
				t.Run(fmt.Sprintf("hostile=%v/failure=%q", hostile, failure), func(t *testing.T) {
					t.Parallel()
					ops := 10_000
					if testing.Short() {
						ops = 1_000
					}
					stressRun(t, 1, 8, ops, failure, hostile)
				})
			}
		}
	})
	// Every goroutine the Initializers started has ended.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before, "goroutines left behind")
}
