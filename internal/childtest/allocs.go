package childtest

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
)

// AllocsPerRun is [testing.AllocsPerRun] for a path that runs beside a
// Runtime's own goroutines, such as its call and health watches. It calls f
// once to warm it up, then measures three times and returns the fewest.
//
// testing.AllocsPerRun counts the allocations of every goroutine, so one of
// the Runtime's that falls in the window inflates that measurement. An
// allocation of f's own shows in all three. Taking the fewest therefore
// loses nothing that one measurement could prove. Call [HealthSettled]
// first, so that the watch's start-up, which allocates, is over.
func AllocsPerRun(runs int, f func()) float64 {
	f()
	fewest := testing.AllocsPerRun(runs, f)
	for range 2 {
		fewest = min(fewest, testing.AllocsPerRun(runs, f))
	}
	return fewest
}

// settleBound bounds HealthSettled's wait. A watch that has not settled by
// then is a failure of its own, not a slow machine.
const settleBound = time.Minute

// HealthSettled waits until r's health watch has said something of every
// device, as r's Stats show it: that it watches the device and read its
// counters (or failed to), or why it cannot. Its start-up is then over. It
// waits on Stats' Changed, not on the clock, and fails t if the watch has
// not settled within a minute.
func HealthSettled(t testing.TB, r *device.Runtime) {
	t.Helper()
	bound := time.NewTimer(settleBound)
	defer bound.Stop()
	for {
		s := r.Stats()
		if settled(s.Health) {
			return
		}
		select {
		case <-s.Changed:
		case <-bound.C:
			t.Fatalf("the health watch has not settled in %v: %+v", settleBound, s.Health)
		}
	}
}

// settled is gpuprobe's healthSettled: every device watched with its
// counters read or its watch failing, or unwatched with why.
func settled(hs []device.DeviceHealth) bool {
	for _, h := range hs {
		if (!h.Watched && strings.Contains(h.Why, "has not started yet")) ||
			(h.Watched && h.Counters == nil && h.WatchError == "") {
			return false
		}
	}
	return hs != nil
}
