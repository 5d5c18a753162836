// want package:"\\) sets modvis/internal/clock.Yield2 from outside}"

// Package knobs lets its users set a hook of an internal package.
package knobs

import (
	"runtime"

	"modvis/internal/clock"
)

func SetYield(f func()) { clock.Yield2 = f }

func init() { clock.Gosched = runtime.Gosched }
