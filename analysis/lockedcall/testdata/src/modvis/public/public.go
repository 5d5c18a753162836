// want package:"\\) sets modvis/internal/clock.Options.OnTick from outside; sets modvis/internal/clock.Sleep2 from outside; sets modvis/internal/clock.Yield2 from outside}"

// Package public exports a hook that anyone can set, and lets anyone set a
// hook of an internal package.
package public

import (
	"modvis/internal/clock"
	"modvis/knobs"
)

var Hook = func() {}

func SetSleep(f func()) { clock.Sleep2 = f }

// SetYield is knobs.SetYield.
func SetYield(f func()) { knobs.SetYield(f) }

func SetTick(f func()) { clock.Default.OnTick = f }

// Quiet sets a hook to the package's own code.
func Quiet() { clock.Gosched = func() {} }
