package fakedriver

import (
	"context"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
)

// Observed is a backend whose health watch a test follows step by step: it
// is Backend's, with AfterReport run once each of its reports has been
// delivered, and BeforeCall as each of its tracked driver calls begins.
// Both run on the watch's own goroutine, in the order the watch makes them,
// so a test checks there what a report has done by the time it returns (a
// device lost, a verdict), or counts the watch's rounds, by what the watch
// does rather than by the clock. Either may be nil. Every other capability
// is Backend's, through Unwrap.
type Observed struct {
	driver.Backend
	AfterReport func(healthwatch.Event)
	BeforeCall  func(ordinal int, op string)
}

// Unwrap returns the backend observed.
func (o Observed) Unwrap() driver.Backend { return o.Backend }

// WatchHealth runs Backend's WatchHealth, observed; a Backend without one
// is not supported.
func (o Observed) WatchHealth(ctx context.Context, report func(healthwatch.Event)) error {
	hw, ok := driver.Capability[driver.HealthWatcher](o.Backend)
	if !ok {
		return driver.ErrNotSupported
	}
	if o.BeforeCall != nil {
		ctx = healthwatch.WithCallTracker(ctx, beforeCall{ctx, o.BeforeCall})
	}
	return hw.WatchHealth(ctx, func(ev healthwatch.Event) {
		report(ev)
		if o.AfterReport != nil {
			o.AfterReport(ev)
		}
	})
}

// beforeCall runs f as each call begins, then tells the tracker of outer,
// the Runtime's, as the watch would have.
type beforeCall struct {
	outer context.Context
	f     func(ordinal int, op string)
}

func (b beforeCall) Begin(ordinal int, op string, waits time.Duration) (end func()) {
	b.f(ordinal, op)
	return healthwatch.TrackWait(b.outer, ordinal, op, waits)
}
