package device

import (
	"sync"
	"testing"
	"time"
)

// RecordRetryWaits makes the preflight's waits between attempts return at
// once, for the rest of t, and returns what they would have been, in order.
func RecordRetryWaits(t *testing.T) func() []time.Duration {
	var mu sync.Mutex
	var waits []time.Duration
	saved := retryWait
	retryWait = func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, d)
	}
	t.Cleanup(func() { retryWait = saved })
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), waits...)
	}
}
