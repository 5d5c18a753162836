// Package clock holds hooks that only the module can set.
package clock

import "time"

var Now = time.Now // want Now:"holds visible code"

// AfterFunc returns a stop function that only stops the timer.
var AfterFunc = func(d time.Duration, f func()) func() { // want AfterFunc:"holds visible code; results \\[0\\] too"
	t := time.AfterFunc(d, f)
	return func() { t.Stop() }
}

// Sleep is set by the package that uses it.
var Sleep func(time.Duration) // want Sleep:"holds visible code where set"
