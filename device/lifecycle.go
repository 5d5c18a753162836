package device

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/healthwatch"
	"github.com/gpuinit/gpuinit/lazy"
)

// The lifecycle of a Runtime, in order. Open (in registry.go) makes it and
// touches nothing. The first Init runs initialize. That brings a backend up
// (bringup.go), then starts the watches. Shutdown stops all of it.

// Init initializes the backend on first call and returns the memoized
// result. It runs the driver's init, reads the device information, then
// runs the work queued by LazyCall. A queued call's failure is its own, not
// Init's. See [lazy.Initializer.Init] for cancellation and re-entry. After
// Shutdown, Init returns [ErrClosed].
// A nil ctx panics, naming Init.
func (r *Runtime) Init(ctx context.Context) error {
	nilContext(ctx, "Init")
	if r.stop.closed.Load() {
		return ErrClosed
	}
	return r.said(r.init.Init(ctx))
}

// initFailure is the initialization's memoized failure as a Runtime says it.
// It wraps lazy's *InitError, which errors.As still finds, with the queued
// calls that never ran. Its message drops lazy's prefix, so that it has one
// prefix: the backend's.
type initFailure struct{ ie *lazy.InitError }

func (f *initFailure) Error() string { return f.ie.Err.Error() }
func (f *initFailure) Unwrap() error { return f.ie }

// said is err as the Runtime says it. The memoized initialization failure
// gets its one form, made once. Anything else is returned as it is.
func (r *Runtime) said(err error) error {
	ie, ok := err.(*lazy.InitError)
	if !ok {
		return err
	}
	if f := r.saidFailure.Load(); f != nil && f.ie == ie {
		return f
	}
	r.saidFailure.CompareAndSwap(nil, &initFailure{ie})
	return r.saidFailure.Load()
}

// Start starts the initialization in the background, if nothing has, and
// returns at once. It returns nil when the initialization is under way or
// finished. When ctx is already done, it starts nothing and returns an error
// wrapping ctx.Err(). After Shutdown it returns [ErrClosed]. See
// [lazy.Initializer.Start].
// A nil ctx panics, naming Start.
func (r *Runtime) Start(ctx context.Context) error {
	nilContext(ctx, "Start")
	if r.stop.closed.Load() {
		return ErrClosed
	}
	return r.init.Start(ctx)
}

// LazyCall runs fn now if the Runtime is initialized. Otherwise it queues fn
// to run right after initialization. It never initializes. See
// [lazy.Initializer.Call].
//
// A queued fn's failure is its own call's. It does not fail the
// initialization, which every caller shares. It is recorded with the call
// site that queued it, in Stats' FailedCalls and the health status. The
// caller's package says it back as its kind of call has it. In rng, the
// next call of the same method returns it.
//
// PyTorch instead raises the failure from whatever call initializes. It
// re-runs the whole queue at the next one, so a failure there stops every
// later caller too. One request's bad ordinal must not take the GPU from
// every other request for the life of the process.
//
// After Shutdown, LazyCall returns [ErrClosed].
// A nil ctx panics, naming LazyCall.
func (r *Runtime) LazyCall(ctx context.Context, fn lazy.Func) error {
	nilContext(ctx, "LazyCall")
	if r.stop.closed.Load() {
		return ErrClosed
	}
	return r.init.CallDepth(ctx, 1, fn)
}

// LazyCallDepth is LazyCall for wrappers. The call site recorded for a
// queued fn is depth frames above LazyCallDepth's caller.
// A nil ctx panics, naming LazyCallDepth.
func (r *Runtime) LazyCallDepth(ctx context.Context, depth int, fn lazy.Func) error {
	nilContext(ctx, "LazyCallDepth")
	if r.stop.closed.Load() {
		return ErrClosed
	}
	return r.init.CallDepth(ctx, depth+1, fn)
}

// initialize is the Runtime's init function. It tries each candidate in
// order, through a preflight child first if the preflight is on. The first
// that gives at least one device is the Runtime's backend.
//
// With the preflight on, a candidate whose child failed for a reason that
// clears by itself (NotYet) is tried again. Each retry runs in a fresh
// child, with capped backoff, until the preflight's RetryFor has passed.
// With one candidate, its own error is returned. With several, a
// *NoBackendError lists each one's. Every failure carries its class.
func (r *Runtime) initialize(ctx context.Context) error {
	ctx, unbind := r.stop.bind(ctx) // Shutdown kills a child under way and ends a wait
	defer unbind()
	b := r.moveTo(BringUp{}, "", "")
	floors, preflight, err := r.readSettings()
	if err != nil {
		return &classified{err: err, class: NeedsOperator}
	}
	seen := readVisibility()
	r.visibility.Store(&seen)
	b.Preflight = preflight != nil
	start := time.Now()
	var backoff time.Duration
	if preflight != nil {
		backoff = preflight.Backoff
	}
	failures := map[string]error{}
	pending := r.candidates
	for {
		var retry []driver.Registration
		for _, reg := range pending {
			var inChild bool
			var c *choice
			var devices []Info
			b, c, devices, inChild, err = r.tryCandidate(ctx, b, reg, floors[reg.Name], preflight)
			if err == nil && r.stop.closed.Load() {
				// The driver's init in this process outlasted Shutdown: start nothing.
				err = ErrClosed
			}
			if errors.Is(err, ErrClosed) {
				r.moveTo(b, "", "")
				return ErrClosed
			}
			if err == nil {
				delete(failures, reg.Name) // an earlier attempt's not-yet failure is moot now
				r.devices.Store(&devices)
				r.chosen.Store(c)
				r.watchAfterInit(c.backend, len(devices))
				if r.auto {
					r.registry.runtimes.add(reg.Name, r)
					r.notePresentVendors(reg.Name, failures)
				}
				r.moveTo(b, PhaseQueued, reg.Name)
				return nil
			}
			err = classify(reg, err)
			failures[reg.Name] = err
			b.LastErr, b.LastClass = err, ClassOf(err)
			if r.auto {
				r.storePassedOver(failures)
			}
			if inChild && b.LastClass == NotYet {
				retry = append(retry, reg)
			}
		}
		// Only a child's failure is retried, so preflight is on here.
		if len(retry) == 0 || time.Since(start)+backoff > preflight.RetryFor {
			r.moveTo(b, "", "")
			return r.finalError(failures, retry, b.Attempts, time.Since(start), preflight)
		}
		b.Next = time.Now().Add(backoff)
		b = r.moveTo(b, PhaseWaiting, retry[0].Name)
		if !r.stop.enter() {
			return ErrClosed
		}
		retryWait(ctx, backoff)
		r.stop.leave()
		b.Next = time.Time{}
		backoff = min(2*backoff, preflight.MaxBackoff)
		pending = retry
	}
}

// watchAfterInit starts what watches the devices once init has found them.
// That is the call watch, and the backend's health watch with the record of
// losses.
func (r *Runtime) watchAfterInit(b driver.Backend, n int) {
	r.startWatching(n)
	w := healthwatch.New(r.Name(), n, r.republish, r.callDeadlineNow)
	if !r.watch.CompareAndSwap(nil, w) {
		return
	}
	r.republish()
	if !r.stop.closed.Load() {
		w.Start(b)
	}
}

// shutdown is a Runtime's Shutdown. done closes when the first one is over.
// err is what it found.
type shutdown struct {
	once sync.Once
	done chan struct{}
	err  error

	mu    sync.Mutex // protects hooks
	hooks []func(context.Context) error
}

// RegisterOnShutdown registers f to run when Shutdown starts, with
// Shutdown's context. It runs before the Runtime stops its watches. The
// health handlers and the generators over the Runtime register their Close
// here (health.New and rng.New do). One Shutdown then stops all three. f's
// error is joined into Shutdown's. Registered after Shutdown has started, f
// runs at once, with an ended context.
func (r *Runtime) RegisterOnShutdown(f func(ctx context.Context) error) {
	r.shutdown.mu.Lock()
	if !r.stop.closed.Load() {
		r.shutdown.hooks = append(r.shutdown.hooks, f)
		r.shutdown.mu.Unlock()
		return
	}
	r.shutdown.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = f(ctx)
}

// Shutdown shuts the Runtime down, as [net/http.Server.Shutdown] does. From
// its start every call returns [ErrClosed]. Stats, Name and the versions
// still answer. Open of its name gives a fresh Runtime.
//
// Shutdown runs the functions registered with RegisterOnShutdown. It kills a
// preflight child under way and ends the preflight's waits. It stops the
// call watch and the health watch. Then it waits for the calls in flight
// (Do's functions, draws, memory reads) until ctx ends.
//
// What is still in the driver when ctx ends is abandoned, never waited for:
// a health watch's call, or a call that hung. Its goroutine stays blocked in
// the driver. The result says what was abandoned, and so does Stats. The
// result then wraps ctx.Err().
//
// Shutdown is safe to call more than once, from many goroutines. Each call
// waits for the first one's work, as long as its own ctx allows. It then
// returns the first one's result; if its ctx ends first, an error wrapping
// ctx.Err().
func (r *Runtime) Shutdown(ctx context.Context) error {
	nilContext(ctx, "Shutdown")
	first := false
	r.shutdown.once.Do(func() {
		first = true
		r.shutdown.done = make(chan struct{})
	})
	if first {
		r.shutdown.err = r.shutDown(ctx)
		close(r.shutdown.done)
		return r.shutdown.err
	}
	select {
	case <-r.shutdown.done:
		return r.shutdown.err
	case <-ctx.Done():
		return fmt.Errorf("device: shutdown of the %s runtime still under way: %w", r.Name(), ctx.Err())
	}
}

// shutDown is the first Shutdown's work.
func (r *Runtime) shutDown(ctx context.Context) error {
	r.shutdown.mu.Lock()
	r.stop.markClosed()
	hooks := r.shutdown.hooks
	r.shutdown.mu.Unlock()
	if r.registry != nil {
		r.registry.runtimes.forget(r)
	}
	var errs []error
	for _, f := range hooks {
		if err := f(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	var abandoned []string
	if !r.stop.close(ctx) {
		abandoned = append(abandoned, "a preflight child")
	}
	if w := r.calls.Load(); w != nil {
		w.Close()
	}
	if w := r.watch.Load(); w != nil && w.Stop(ctx) {
		abandoned = append(abandoned, "the health watch, in its driver call")
	}
	if n := r.inFlight.wait(ctx); n > 0 {
		abandoned = append(abandoned, fmt.Sprintf("%d driver call(s) in flight", n))
	}
	if len(abandoned) > 0 {
		errs = append(errs, fmt.Errorf("device: the %s runtime shut down, abandoning %s: %w", r.Name(), joinAnd(abandoned), ctx.Err()))
	}
	return errors.Join(errs...)
}

// joinAnd joins words as a sentence does: "a, b and c".
func joinAnd(words []string) string {
	switch n := len(words); n {
	case 0:
		return ""
	case 1:
		return words[0]
	default:
		s := words[0]
		for _, w := range words[1 : n-1] {
			s += ", " + w
		}
		return s + " and " + words[n-1]
	}
}
