package lazy

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// watchdog watches the function that the initialization goroutine runs and logs
// once per function that outlasts the threshold. One timer serves the whole
// initialization, so that watching a function costs a clock read and an atomic
// store rather than a timer of its own.
//
// It only reports. A warning is written on the timer's goroutine, never on the
// initialization's, and nothing waits for it: a slow or blocked slog.Handler
// delays no Init, and a panicking one is recovered and reported once.
type watchdog struct {
	threshold time.Duration
	opts      *options
	running   *atomic.Pointer[entry] // the Initializer's: the function running now, nil between functions
	logPanic  sync.Once              // reports the first panic of the logger

	mu      sync.Mutex // protects following fields
	timer   *time.Timer
	stopped bool
	logged  *entry // the last function warned about
}

func newWatchdog(o *options, running *atomic.Pointer[entry]) *watchdog {
	w := &watchdog{threshold: o.threshold(), opts: o, running: running}
	if w.threshold > 0 {
		// The timer can fire before AfterFunc returns, where the threshold is
		// short and the machine busy: check waits on mu until w.timer is set.
		w.mu.Lock()
		w.timer = afterFunc(w.threshold, w.check)
		w.mu.Unlock()
	}
	return w
}

// afterFunc is time.AfterFunc. A test replaces it to run the function as
// soon as the timer exists, before AfterFunc returns.
var afterFunc = time.AfterFunc

// run runs e under the watchdog and turns a panic into a *PanicError. A
// runtime.Goexit passes through: the caller's deferred code handles it.
func (w *watchdog) run(ctx context.Context, e *entry) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return e.fn(ctx)
}

// check runs on the timer's goroutine: it warns about the current function if it
// has outlasted the threshold, then re-arms for the moment the current function
// would.
func (w *watchdog) check() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	next := w.threshold
	var slow *entry
	var elapsed time.Duration
	if e := w.running.Load(); e != nil && e != w.logged {
		elapsed = time.Since(e.start)
		if elapsed >= w.threshold {
			slow, w.logged = e, e
		} else {
			next = w.threshold - elapsed
		}
	}
	w.timer.Reset(next)
	w.mu.Unlock()
	if slow != nil {
		w.warn(slow, elapsed)
	}
}

// warn writes the warning through the configured logger, which is the
// caller's code: it runs with no lock held, and its panic is recovered.
func (w *watchdog) warn(slow *entry, elapsed time.Duration) {
	logger := w.opts.log()
	defer func() {
		if v := recover(); v != nil {
			w.logPanic.Do(func() { reportLoggerPanic(logger, v) })
		}
	}()
	phase := "queued call"
	if slow.isInit {
		phase = "init"
	}
	logger.Warn(slowMessage,
		"phase", phase,
		"site", slow.site(),
		"elapsed", elapsed,
		"threshold", w.threshold,
		StacksKey, string(stacks(true)))
}

// slowMessage is the watchdog's warning: one short line, whatever the
// handler. What would make it long, the stacks, is an attribute of its own.
const slowMessage = "lazy: slow initialization: a deadlock or a hung driver call?"

// StacksKey is the key of the watchdog's attribute that holds every
// goroutine's stack, as runtime.Stack writes them: one string, often
// thousands of characters over many lines. It is the warning's only long
// attribute. A handler drops it with a ReplaceAttr that returns the empty
// Attr for it, or keeps it for a log store that indexes multi-line values.
const StacksKey = "goroutines"

// reportLoggerPanic says once that the watchdog's logger panicked: through
// slog.Default, unless that is the logger that failed, else on stderr.
func reportLoggerPanic(failed *slog.Logger, v any) {
	msg := fmt.Sprintf("lazy: the watchdog's logger panicked while warning about a slow initialization; further panics of this logger are not reported: %v", v)
	if def := slog.Default(); def != failed {
		defer func() {
			if recover() != nil {
				fmt.Fprintln(os.Stderr, msg)
			}
		}()
		def.Error(msg)
		return
	}
	fmt.Fprintln(os.Stderr, msg)
}

// stop stops the timer for good. A warning being written goes on, and is not
// waited for: the watchdog never delays the result.
func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
}
