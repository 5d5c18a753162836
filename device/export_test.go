package device

import (
	"context"
	"sync"
	"testing"
	"time"
)

// OnRetryWait makes the preflight's waits between attempts call f with the
// wait they would have been, while the bring-up is in PhaseWaiting, and then
// return at once, for the rest of t.
func OnRetryWait(t *testing.T, f func(time.Duration)) {
	saved := retryWait
	retryWait = func(_ context.Context, d time.Duration) { f(d) }
	t.Cleanup(func() { retryWait = saved })
}

// RecordRetryWaits makes the preflight's waits between attempts return at
// once, for the rest of t, and returns what they would have been, in order.
func RecordRetryWaits(t *testing.T) func() []time.Duration {
	var mu sync.Mutex
	var waits []time.Duration
	OnRetryWait(t, func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, d)
	})
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), waits...)
	}
}

// RetryClockOfWaits is RecordRetryWaits, with the bring-up's clock against
// RetryFor made of those waits alone, for the rest of t: how many children
// run then follows from the settings, not from how fast the machine starts
// them.
func RetryClockOfWaits(t *testing.T) func() []time.Duration {
	waits := RecordRetryWaits(t)
	saved := retryClock
	retryClock = func(time.Time) time.Duration {
		var sum time.Duration
		for _, d := range waits() {
			sum += d
		}
		return sum
	}
	t.Cleanup(func() { retryClock = saved })
	return waits
}

// CallMonitorScanning reports whether r's call monitor scans (some call it
// has not yet reported hung may be in flight) rather than sleeps, for tests
// of the monitor's CPU use.
func CallMonitorScanning(r *Runtime) bool {
	w := r.calls.Load()
	return w != nil && w.Scanning()
}

// AddRuntime is what auto's successful init does with its Runtime: give it
// name in g.
func AddRuntime(g *Registry, name string, r *Runtime) { g.runtimes.add(name, r) }

// Layer is what errors.Is or errors.As look at inside err, one layer down:
// what its Unwrap returns, and what the package's As-only holders hold.
func Layer(err error) []error {
	switch e := err.(type) {
	case *NoBackendError: // As alone finds the backends' errors
		layer := e.Unwrap()
		for _, f := range e.Tried {
			layer = append(layer, f.Err)
		}
		return layer
	case interface{ Unwrap() error }:
		return []error{e.Unwrap()}
	case interface{ Unwrap() []error }:
		return e.Unwrap()
	}
	return nil
}

// CloneStats is Stats' copy of s, for the tests of what it copies.
func CloneStats(s Stats) Stats { return s.clone() }

// HasPrestartedChild reports whether r holds a child that Preflight.Prestart
// started and no initialization has taken.
func HasPrestartedChild(r *Runtime) bool {
	r.settings.mu.Lock()
	defer r.settings.mu.Unlock()
	return r.settings.warm != nil
}
