package childtest

import (
	"testing"
	"time"
)

// AllocsPerRun is [testing.AllocsPerRun] for a path that runs beside a
// Runtime's own goroutines, such as its call and health watches. It calls f
// once to warm it up, then measures three times and returns the fewest.
//
// testing.AllocsPerRun counts the allocations of every goroutine, so one of
// the Runtime's that falls in the window inflates that measurement. An
// allocation of f's own shows in all three. Taking the fewest therefore
// loses nothing that one measurement could prove. Wait with Until for the
// watch to settle first (device.Stats.HealthSettled), so that its start-up,
// which allocates, is over.
func AllocsPerRun(runs int, f func()) float64 {
	f()
	fewest := testing.AllocsPerRun(runs, f)
	for range 2 {
		fewest = min(fewest, testing.AllocsPerRun(runs, f))
	}
	return fewest
}

// untilBound bounds Until's wait. A state not reached by then is a failure
// of its own, not a slow machine.
const untilBound = time.Minute

// Until waits until check reports done, and fails t if that takes over a
// minute. check also returns a channel that closes at the next change of
// what it reads, such as device.Stats' Changed: Until waits on it, never
// on the clock, so a loaded machine only makes it slower.
func Until(t testing.TB, what string, check func() (done bool, changed <-chan struct{})) {
	t.Helper()
	bound := time.NewTimer(untilBound)
	defer bound.Stop()
	for {
		done, changed := check()
		if done {
			return
		}
		select {
		case <-changed:
		case <-bound.C:
			t.Fatalf("%s: not in %v", what, untilBound)
		}
	}
}
