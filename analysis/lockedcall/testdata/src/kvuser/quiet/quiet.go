// Package quiet uses a dependency's cache under its lock, and builds its
// configs without KeyToHash or with its own hash: the cache calls the
// dependency's hash or the package's, never code from outside.
package quiet

import (
	"sync"

	"example.com/kv"
)

var mu sync.Mutex

// Lookup leaves KeyToHash nil: the cache's own hash.
func Lookup(key string) int { // want Lookup:"locks mu: Lookup → mu.Lock$"
	c, err := kv.NewCache(&kv.Config{MaxCost: 10})
	if err != nil {
		return 0
	}
	mu.Lock()
	defer mu.Unlock()
	return c.Get(key)
}

// Own sets KeyToHash to the package's own function.
func Own(key string) int { // want Own:"locks mu: Own → mu.Lock$"
	cfg := kv.Config{}
	cfg.KeyToHash = hash
	c, _ := kv.NewCache(&cfg)
	mu.Lock()
	defer mu.Unlock()
	return c.Get(key)
}

func hash(key string) uint64 { return 1 }

// Shared is given its cache: nothing in the module fills KeyToHash from
// outside, so it holds the dependency's hash or the module's.
func Shared(c *kv.Cache, key string) int { // want Shared:"locks mu: Shared → mu.Lock$"
	mu.Lock()
	defer mu.Unlock()
	return c.Get(key)
}
