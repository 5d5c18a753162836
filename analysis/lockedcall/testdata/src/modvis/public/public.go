// want package:"\\) sets modvis/internal/clock.Options.OnTick from outside; sets modvis/internal/clock.Sleep2 from outside; sets modvis/internal/clock.Yield2 from outside}"

// Package public exports hooks that anyone can set, and lets anyone set a
// hook of an internal package.
package public

import (
	"modvis/internal/clock"
	"modvis/knobs"
)

// Hook is only stored by its initializer, with the package's own code, and
// no package of the module assigns it: its own code (issue 39), to the
// module's packages too.
var Hook = func() {} // want Hook:"holds visible code"

// Settable is stored by SetHook too: whoever calls it chooses the code.
var Settable = func() {}

// SetHook sets Settable.
func SetHook(f func()) { Settable = f }

func SetSleep(f func()) { clock.Sleep2 = f }

// SetYield is knobs.SetYield.
func SetYield(f func()) { knobs.SetYield(f) }

func SetTick(f func()) { clock.Default.OnTick = f }

// Quiet sets a hook to the package's own code.
func Quiet() { clock.Gosched = func() {} }
