// Package relay passes what its callers give it on to pool: its own
// obligation, which its callers check.
package relay

import "oblig/internal/pool"

// Watch passes onEvict on to pool.New.
func Watch(onEvict func(string)) *pool.Pool { // want Watch:"param 0 via pool.New runs in Evict → p.onEvict while p.mu is held"
	return pool.New(onEvict)
}

// Quiet passes its own code.
func Quiet() *pool.Pool { return pool.New(func(string) {}) }
