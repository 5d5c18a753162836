// want package:"sets pubvar/env.Library from outside}$"

// Package useover imports a package that assigns env's Library from
// outside: its calls of Library under its lock are reported.
package useover

import (
	"sync"

	"pubvar/env"
	_ "pubvar/override"
)

var mu sync.Mutex

// Name reads the library's name under mu.
func Name() string { // want Name:"locks mu: Name → mu.Lock"
	mu.Lock()
	defer mu.Unlock()
	return env.Library() // want `call of env.Library \(a package variable\) while mu is held`
}
