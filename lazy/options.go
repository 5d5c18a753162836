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
}

// WithWatchdog sets how long init or one queued function may run before the
// Initializer logs, once for that function, a warning at slog.LevelWarn with the
// phase, the call site, the time elapsed and every goroutine's stack. The default
// is DefaultWatchdog; zero or less disables the watchdog. The watchdog only
// reports: it never interrupts the function.
func WithWatchdog(threshold time.Duration) Option {
	return func(o *options) {
		o.watchdogSet = true
		o.watchdog = threshold
	}
}

// WithLogger sets the logger for the watchdog's warnings. The default is
// slog.Default() at the time of the warning. Warnings are written on the
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
