package device

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gpuinit/gpuinit/device/driver"
)

// ErrClosed is returned by a Runtime's calls after [Runtime.Shutdown], and by
// an initialization that Shutdown stopped. It is no initialization failure:
// its class is [ClassNone].
var ErrClosed = errors.New("device: the Runtime is closed")

// closing is a Runtime's one closing state, as inShutdown is a
// net/http.Server's. Shutdown sets closed once, and every call checks it
// first. What Shutdown then waits for is counted here, each piece poking
// wake when it ends after close:
//   - the initialization, while initialize runs (with its preflight
//     children and the waits between them, which ctx's end stops);
//   - the calls into the devices' drivers, per device, so that those on a
//     device lost as hung are not waited for;
//   - the functions registered with RegisterOnShutdown.
type closing struct {
	closed atomic.Bool
	ctx    context.Context // ends at close: kills a preflight child, ends a wait and the init's ctx
	cancel context.CancelFunc
	wake   chan struct{} // a token when something Shutdown waits for has ended after close

	mu    sync.Mutex // orders RegisterOnShutdown with close
	hooks []hook

	initializing atomic.Int32                   // 1 while initialize runs
	draining     atomic.Bool                    // calls are refused: the hooks have had their time
	calls        atomic.Pointer[[]atomic.Int64] // calls in flight, by ordinal; set by init

	once sync.Once
	done chan struct{} // closed when the first Shutdown is over
	err  error         // what it found
}

// hook is a function registered with RegisterOnShutdown, and who registered
// it, to name it if it is abandoned.
type hook struct {
	f     func(context.Context) error
	owner string
}

func (c *closing) init() {
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wake = make(chan struct{}, 1)
	c.done = make(chan struct{})
}

// closed reports whether Shutdown has started.
func (r *Runtime) closed() bool { return r.closing.closed.Load() }

// poke tells the Shutdown under way that something it waits for has ended.
func (c *closing) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// enterInit counts the initialization in, or refuses it once closed.
func (c *closing) enterInit() bool {
	c.initializing.Add(1)
	if c.closed.Load() {
		c.leaveInit()
		return false
	}
	return true
}

// leaveInit counts the initialization out.
func (c *closing) leaveInit() {
	if c.initializing.Add(-1) == 0 && c.closed.Load() {
		c.poke()
	}
}

// countCalls makes the per-device counts of calls in flight, once init has
// found n devices, before any call can be made on them.
func (c *closing) countCalls(n int) {
	counts := make([]atomic.Int64, n)
	c.calls.Store(&counts)
}

// enterCall counts a call on device ordinal in, or refuses it once the calls
// drain. It costs two atomic operations.
func (c *closing) enterCall(ordinal int) (*atomic.Int64, bool) {
	counts := c.calls.Load()
	if counts == nil || ordinal < 0 || ordinal >= len(*counts) {
		return nil, !c.draining.Load()
	}
	n := &(*counts)[ordinal]
	n.Add(1)
	if c.draining.Load() {
		c.leaveCall(n)
		return nil, false
	}
	return n, true
}

// leaveCall counts a call out; nil does nothing.
func (c *closing) leaveCall(n *atomic.Int64) {
	if n != nil && n.Add(-1) == 0 && c.draining.Load() {
		c.poke()
	}
}

// RegisterOnShutdown registers f to run when Shutdown starts, with
// Shutdown's context. The health handlers and the generators over the
// Runtime register their Close here (health.New and rng.New do). One
// Shutdown then stops all three. f's error is joined into Shutdown's.
//
// Each f runs on a goroutine of its own, beside the others. Shutdown waits
// for them until its context ends, and calls into the drivers are still
// made for them meanwhile (a generator's Close), while every other caller
// gets [ErrClosed]. An f that has not returned by then is abandoned, and
// Shutdown's error names who registered it. Registered after Shutdown has
// started, f runs at once, with an ended context.
func (r *Runtime) RegisterOnShutdown(f func(ctx context.Context) error) {
	owner := "a function"
	if pc, _, _, ok := runtime.Caller(1); ok {
		if fn := runtime.FuncForPC(pc); fn != nil {
			owner = fn.Name()[strings.LastIndexByte(fn.Name(), '/')+1:]
		}
	}
	c := &r.closing
	c.mu.Lock()
	if !c.closed.Load() {
		c.hooks = append(c.hooks, hook{f: f, owner: owner})
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = f(ctx)
}

// Shutdown shuts the Runtime down, as [net/http.Server.Shutdown] does. From
// its start every call returns [ErrClosed]. Stats, Name and the versions
// still answer. Open of its name gives a fresh Runtime.
//
// Shutdown runs the functions registered with RegisterOnShutdown. It kills a
// preflight child under way, ends the preflight's waits, and ends the
// context of a driver's init under way. It stops the health watch. Then it
// waits for the initialization under way, the calls in flight (Do's
// functions, draws, memory reads) and the health watch, until ctx ends.
//
// Nothing is waited for past ctx's end, and nothing known to hang is waited
// for at all: a call whose device was lost as hung, or a health watch whose
// driver call is past its deadline, is abandoned at once. What was
// abandoned stays blocked in the driver, on its own goroutine. The error
// names it, wraps [driver.ErrDeviceHung] where it was known to hang, and
// wraps ctx.Err() where ctx ended. Stats says so too.
//
// Shutdown is safe to call more than once, from many goroutines. Each call
// waits for the first one's work, as long as its own ctx allows. It then
// returns the first one's result; if its ctx ends first, an error wrapping
// ctx.Err().
// A nil ctx panics, naming Shutdown.
func (r *Runtime) Shutdown(ctx context.Context) error {
	nilContext(ctx, "Shutdown")
	c := &r.closing
	first := false
	c.once.Do(func() { first = true })
	if first {
		c.err = r.shutDown(ctx)
		close(c.done)
		return c.err
	}
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return fmt.Errorf("device: shutdown of the %s runtime still under way: %w", r.Name(), ctx.Err())
	}
}

// shutDown is the first Shutdown's work.
func (r *Runtime) shutDown(ctx context.Context) error {
	c := &r.closing
	c.mu.Lock()
	c.closed.Store(true)
	hooks := c.hooks
	c.mu.Unlock()
	c.cancel()
	if r.registry != nil {
		r.registry.runtimes.forget(r)
	}
	w := r.watch.Load()
	if w != nil {
		w.Cancel()
	}
	warmLeft := r.endWarm(ctx) // a pre-started child that no initialization took
	errs, left := runHooks(ctx, hooks)
	if warmLeft {
		left = append(left, "the pre-started preflight child")
	}
	c.draining.Store(true)
	left = append(left, r.waitForInit(ctx)...)
	hung, stillIn := r.waitForCalls(ctx)
	if w != nil {
		switch abandoned, hungIn := w.Wait(ctx); {
		case hungIn != "":
			hung = append(hung, "the health watch, hung in "+hungIn)
		case abandoned:
			left = append(left, "the health watch, in its driver call")
		}
	}
	if calls := r.calls.Load(); calls != nil {
		calls.Close()
	}
	if stillIn > 0 {
		left = append(left, fmt.Sprintf("%d driver call(s) in flight", stillIn))
	}
	if len(left)+len(hung) > 0 {
		errs = append(errs, r.abandoned(ctx, left, hung))
	}
	return errors.Join(errs...)
}

// abandoned is Shutdown's error for what it left behind: left when ctx
// ended, hung because it was known to hang.
func (r *Runtime) abandoned(ctx context.Context, left, hung []string) error {
	msg := fmt.Sprintf("device: the %s runtime shut down, abandoning %s", r.Name(), joinAnd(append(left, hung...)))
	switch {
	case len(left) > 0 && len(hung) > 0:
		return fmt.Errorf("%s: %w (%w)", msg, ctx.Err(), driver.ErrDeviceHung)
	case len(left) > 0:
		return fmt.Errorf("%s: %w", msg, ctx.Err())
	}
	return fmt.Errorf("%s: %w", msg, driver.ErrDeviceHung)
}

// runHooks runs each hook on a goroutine of its own and waits for them
// until ctx ends. It returns their errors and names those left running.
func runHooks(ctx context.Context, hooks []hook) (errs []error, left []string) {
	type result struct {
		i   int
		err error
	}
	results := make(chan result, len(hooks)) // a hook left running sends later, to no one
	for i, h := range hooks {
		go func() { results <- result{i, h.f(ctx)} }()
	}
	returned := make([]bool, len(hooks))
wait:
	for range hooks {
		select {
		case res := <-results:
			returned[res.i] = true
			if res.err != nil {
				errs = append(errs, res.err)
			}
		case <-ctx.Done():
			break wait
		}
	}
	for i, h := range hooks {
		if !returned[i] {
			left = append(left, "the shutdown function registered by "+h.owner)
		}
	}
	return errs, left
}

// waitForInit waits for the initialization under way to return until ctx
// ends, and names it if it did not. Its preflight child and its waits end
// at close, so what can be left is a driver's init in this process.
func (r *Runtime) waitForInit(ctx context.Context) []string {
	c := &r.closing
	for c.initializing.Load() > 0 {
		select {
		case <-c.wake:
		case <-ctx.Done():
			if c.initializing.Load() == 0 {
				return nil
			}
			what := "the initialization"
			if b := r.bringUpNow(); b.Phase == PhaseDriver {
				what = "the initialization, in the " + b.Backend + " driver's init"
			}
			return []string{what}
		}
	}
	return nil
}

// waitForCalls waits for the calls in flight to return until ctx ends. A
// call on a device lost as hung is not waited for. It names the devices
// whose calls it did not wait for as hung, and counts the others still in
// flight when ctx ended.
func (r *Runtime) waitForCalls(ctx context.Context) (hung []string, stillIn int64) {
	c := &r.closing
	counts := c.calls.Load()
	if counts == nil {
		return nil, 0
	}
	for {
		changed := r.view.Load().changed // a device lost as hung wakes the wait
		hung, stillIn = nil, 0
		for ordinal := range *counts {
			n := (*counts)[ordinal].Load()
			if n <= 0 {
				continue
			}
			if l, ok := r.findLost(ordinal); ok && errors.Is(l.Err, driver.ErrDeviceHung) {
				hung = append(hung, fmt.Sprintf("%d call(s) on device %d, lost as hung", n, ordinal))
				continue
			}
			stillIn += n
		}
		if stillIn == 0 {
			return hung, 0
		}
		select {
		case <-c.wake:
		case <-changed:
		case <-ctx.Done():
			return hung, stillIn
		}
	}
}

// bind returns ctx, ended also at close.
func (c *closing) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(c.ctx, cancel)
	return ctx, func() { unhook(); cancel() }
}

// joinAnd joins words as a sentence does: "a, b and c".
func joinAnd(words []string) string {
	switch n := len(words); n {
	case 0:
		return ""
	case 1:
		return words[0]
	default:
		return strings.Join(words[:n-1], ", ") + " and " + words[n-1]
	}
}
