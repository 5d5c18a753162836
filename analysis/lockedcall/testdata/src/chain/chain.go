// Package chain runs callers' code in helpers called under a lock: the call
// of the helper is reported, naming the chain down to the code.
package chain

import "sync"

type Cache struct {
	mu      sync.Mutex
	onEvict func(key string)
	items   map[string]int
	keys    []string
}

func New(onEvict func(string)) *Cache {
	return &Cache{onEvict: onEvict, items: map[string]int{}}
}

// Add evicts through two helpers, which call the caller's onEvict.
func (c *Cache) Add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items[key] = len(c.items)
	c.removeOldest() // want `call of c.removeOldest \(it calls c.onEvict, a field: removeOldest → removeElement → c.onEvict\) while c.mu is held; if c.onEvict re-enters, this deadlocks`
}

// Trim evicts without the lock: the helpers run under it only on some
// callers' paths, so it is their callers that are reported.
func (c *Cache) Trim() {
	c.removeOldest()
}

func (c *Cache) removeOldest() {
	for key := range c.items {
		c.removeElement(key)
		return
	}
}

func (c *Cache) removeElement(key string) {
	delete(c.items, key)
	if c.onEvict != nil {
		c.onEvict(key)
	}
}

// Each passes the caller's function to a helper that calls it.
func (c *Cache) Each(fn func(string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	forEach(c.keys, fn) // want `call of forEach \(it calls fn, a parameter: forEach → f\) while c.mu is held`
	forEach(c.keys, func(string) {})
	forEach(c.keys, func(k string) { c.count(k) })
}

func forEach(keys []string, f func(string)) {
	for _, k := range keys {
		f(k)
	}
}

func (c *Cache) count(k string) int { return c.items[k] }
