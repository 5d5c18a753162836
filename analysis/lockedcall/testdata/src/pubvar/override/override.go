// want package:"sets pubvar/env.Library from outside}$"

// Package override assigns env's Library: each store is checked against
// the lock env holds when it calls it.
package override

import "pubvar/env"

// Use stores its caller's reader.
func Use(read func() string) {
	env.Library = read // want `read \(a parameter\) is stored in env.Library, which package env calls while mu is held \(env.go:\d+: Load → Library\); if read re-enters, this deadlocks`
}

// Derived stores a reader that calls env.Load, which holds env's mu while
// it calls Library.
func Derived() {
	env.Library = func() string { return env.Load() + "-x" } // want `a func literal is stored in env.Library, which package env calls while mu is held \(env.go:\d+\), and it locks it again; deadlocks if it runs: Load → Library → \(Derived's closure\) → Load → mu.Lock`
}

// Fixed stores the package's own reader, which takes no lock of env's.
func Fixed() {
	env.Library = func() string { return "fixed" }
}
