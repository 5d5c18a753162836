// Package revorder is a fixture of the equivalence tests, not of
// analysistest: a cycle of calls, each of which locks its own mutex, whose
// Acquires facts depend on which of the two is asked first.
package revorder

import "sync"

var muA, MuB sync.Mutex

func A(n int) {
	if n > 0 {
		B(n - 1)
	}
	muA.Lock()
	muA.Unlock()
}

func B(n int) {
	if n > 0 {
		A(n - 1)
	}
	MuB.Lock()
	MuB.Unlock()
}

func runLocked() { B(1) }
