package lazy

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/internal/legacy"
)

// Reproduce the figures quoted for this package with:
//
//	go test -run '^$' -bench . -benchmem -cpu 1,2 ./lazy

// untracked turns off the tests' lock-holder tracking, which reads the
// goroutine id on every lock, for one benchmark that locks. The ready-path
// benchmarks never lock and do without it: the cleanup closure it registers
// changes their loop's register allocation enough to move the figures by a
// third.
func untracked(b *testing.B) {
	trackLockHolder.Store(false)
	b.Cleanup(func() { trackLockHolder.Store(true) })
}

// directFunc is called through a package-level variable so that neither the
// direct call nor Call can be inlined down to nothing.
var directFunc Func = noop

func BenchmarkDirectCall(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		_ = directFunc(ctx)
	}
}

// readyInitializer is an initialized Initializer, with allocations reported.
func readyInitializer(b *testing.B) (*Initializer, context.Context) {
	b.Helper()
	i := New(nil)
	ctx := context.Background()
	if err := i.Init(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	return i, ctx
}

func BenchmarkCallReady(b *testing.B) {
	i, ctx := readyInitializer(b)
	for b.Loop() {
		_ = i.Call(ctx, directFunc)
	}
}

// callWithoutNilCheck is Call as it was before it checked fn for nil on the
// ready path, kept to measure what the check costs, side by side in one run:
//
//	go test -run '^$' -bench 'CallReady$|CallReadyWithoutNilCheck' -count 5 ./lazy
func (i *Initializer) callWithoutNilCheck(ctx context.Context, fn Func) error {
	if State(i.state.Load()) != Ready {
		ctx, fn = &pendingCall{ctx, i, fn, 0}, callPending
	}
	return fn(ctx)
}

func BenchmarkCallReadyWithoutNilCheck(b *testing.B) {
	i, ctx := readyInitializer(b)
	for b.Loop() {
		_ = i.callWithoutNilCheck(ctx, directFunc)
	}
}

func BenchmarkDirectCallParallel(b *testing.B) {
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = directFunc(ctx)
		}
	})
}

func BenchmarkCallReadyParallel(b *testing.B) {
	i, ctx := readyInitializer(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = i.Call(ctx, directFunc)
		}
	})
}

// BenchmarkCallWhileCallbackRuns measures how long goroutine B's Call takes
// while goroutine A's callback runs for 10 ms, on an initialized Initializer:
// with the pre-fix discipline B waits for A's lock.
func BenchmarkCallWhileCallbackRuns(b *testing.B) {
	untracked(b)
	const callbackTime = 10 * time.Millisecond
	for _, tc := range []struct {
		name string
		mk   func() initCaller
	}{
		{"fixed", func() initCaller { return New(nil) }},
		{"legacy", func() initCaller { return legacyCaller{legacy.New(nil)} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			i := tc.mk()
			ctx := context.Background()
			if err := i.Init(ctx); err != nil {
				b.Fatal(err)
			}
			var waits []time.Duration
			for b.Loop() {
				started, finished := make(chan struct{}), make(chan struct{})
				go func() {
					defer close(finished)
					_ = i.Call(ctx, func(context.Context) error {
						close(started)
						time.Sleep(callbackTime)
						return nil
					})
				}()
				<-started
				t0 := time.Now()
				_ = i.Call(ctx, directFunc)
				waits = append(waits, time.Since(t0))
				<-finished
			}
			slices.Sort(waits)
			b.ReportMetric(float64(waits[len(waits)/2].Nanoseconds()), "median-ns")
		})
	}
}

func BenchmarkQueueCall(b *testing.B) {
	untracked(b)
	i := New(nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = i.Call(ctx, directFunc)
	}
}

func BenchmarkDrainNoopCallbacks(b *testing.B) {
	untracked(b)
	i := New(nil)
	ctx := context.Background()
	for range b.N {
		_ = i.Call(ctx, directFunc)
	}
	b.ResetTimer()
	if err := i.Init(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCurrentGoroutineID reads goroutine ids from every P at once, as
// callers of an initializing Initializer do, with stackMu and without it, side
// by side:
//
//	go test -run '^$' -bench CurrentGoroutineID -cpu 1,2 -count 5 ./lazy
func BenchmarkCurrentGoroutineID(b *testing.B) {
	for _, tc := range []struct {
		name string
		read func() uint64
	}{
		{"serialized", currentGoroutineID},
		{"unserialized", func() uint64 {
			var buf [64]byte
			return parseGoroutineID(buf[:runtime.Stack(buf[:], false)])
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetParallelism(8) // goroutines a P: callers outnumber the cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if tc.read() == 0 {
						b.Error("goroutine id 0")
					}
				}
			})
		})
	}
}
