package lazy

import (
	"log/slog"
	"time"
)

// An Option configures an Initializer in New.
type Option func(*options)

type options struct {
	watchdog    time.Duration // used when watchdogSet; zero or less disables
	watchdogSet bool
	logger      *slog.Logger // nil means slog.Default() at the time of logging
	onFailure   func(*DeferredError)
}

// WithWatchdog sets how long init or one queued function may run before the
// Initializer logs, once for that function, a warning at slog.LevelWarn with the
// phase, the call site, the time elapsed and every goroutine's stack (the
// attribute StacksKey, which a handler may drop). The default
// is DefaultWatchdog; zero or less disables the watchdog. The watchdog only
// reports: it never interrupts the function.
func WithWatchdog(threshold time.Duration) Option {
	return func(o *options) {
		o.watchdogSet = true
		o.watchdog = threshold
	}
}

// WithLogger sets the logger for the watchdog's warnings: a server's own, so
// that they come out in its format. The default is slog.Default() at the
// time of the warning. A warning's message is one short line; every
// goroutine's stack is its StacksKey attribute. Warnings are written on the
// watchdog's own goroutine with no lock held, and nothing waits for them, so a
// slow or blocked handler never delays Init; a handler that panics is recovered
// and reported once, through slog.Default or else on stderr.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

func (o *options) threshold() time.Duration {
	if !o.watchdogSet {
		return DefaultWatchdog
	}
	return max(o.watchdog, 0)
}

func (o *options) log() *slog.Logger {
	if o.logger != nil {
		return o.logger
	}
	return slog.Default()
}

// WithQueuedFailures makes a queued function's failure its own: a queued
// function that returns an error or panics no longer fails the
// initialization. Its *DeferredError (the call site that queued it, and the
// error or *PanicError) is passed to report, on the initialization's
// goroutine with no lock held, and the functions queued after it run as they
// would have. The Initializer still fails for init's own failure, and for a
// queued function that calls runtime.Goexit, which ends the goroutine that
// runs the queue. Functions that run at once (after Ready, or re-entrant)
// return their error to their caller, as without the option.
//
// Without it a queued failure fails the initialization for every caller, for
// the Initializer's life: right where the queued work is part of being
// initialized, wrong where it is one caller's request that happened to come
// early. report must not block: the queue waits for it.
func WithQueuedFailures(report func(*DeferredError)) Option {
	return func(o *options) { o.onFailure = report }
}
