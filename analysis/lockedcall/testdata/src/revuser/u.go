// Package revuser is a fixture of the equivalence tests: it calls revorder's
// cycle while it holds one of the cycle's mutexes.
package revuser

import "revorder"

func Use() {
	revorder.MuB.Lock()
	defer revorder.MuB.Unlock()
	revorder.A(1)
}
