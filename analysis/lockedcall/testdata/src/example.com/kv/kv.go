// Package kv is a dependency of another module (its path has a dot), shaped
// as ristretto's cache: its constructor stores its config's KeyToHash in an
// unexported field, and its own hash where the config leaves it nil.
package kv

import "sync"

// Config configures a cache.
type Config struct {
	MaxCost int
	// KeyToHash hashes a key; nil is the package's own hash.
	KeyToHash func(string) uint64 // want KeyToHash:"sets keyToHash"
}

// Cache holds values by the hash of their keys.
type Cache struct {
	mu        sync.Mutex
	items     map[uint64]int
	keyToHash func(string) uint64
}

// NewCache returns a cache configured by cfg.
func NewCache(cfg *Config) (*Cache, error) {
	c := &Cache{items: map[uint64]int{}, keyToHash: cfg.KeyToHash}
	if c.keyToHash == nil {
		c.keyToHash = defaultHash
	}
	return c, nil
}

func defaultHash(key string) uint64 { return uint64(len(key)) }

// Get hashes key under c.mu: with its users' KeyToHash, which is reported
// here, where the package is analyzed for itself.
func (c *Cache) Get(key string) int { // want Get:"calls param 0 field keyToHash \\(c.keyToHash\\) unless set by example.com/kv.Config.KeyToHash$"
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.items[c.keyToHash(key)] // want `call of c.keyToHash \(a field\) while c.mu is held`
}
