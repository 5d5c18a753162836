// Package app calls env's Library under its own lock: no package of the
// module assigns it, so it holds env's own reader.
package app

import (
	"sync"

	"pubvar/env"
)

var mu sync.Mutex

// Name reads the library's name under mu.
func Name() string { // want Name:"locks mu: Name → mu.Lock"
	mu.Lock()
	defer mu.Unlock()
	return env.Library()
}
