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

// Sleep2 is set by package public to what its users pass: it holds code from
// outside wherever public is imported.
var Sleep2 = func() {} // want Sleep2:"holds visible code"

// Yield2 is set by package knobs to what its users pass; knobs is imported
// through public.
var Yield2 = func() {} // want Yield2:"holds visible code"

// Gosched is set elsewhere in the module, but only to the module's own code.
var Gosched = func() {} // want Gosched:"holds visible code"

// Options.OnTick is set by package public to what its users pass.
type Options struct {
	OnTick func() // want OnTick:"holds visible code"
}

var Default = &Options{OnTick: func() {}}
