// Package cache is issue 31's cache: Get calls the loader it was built with
// while c.mu is held. Whether that deadlocks depends on what the module
// passes to New, so the package leaves an obligation on New.
package cache

import "sync"

// Cache loads each key once, with the loader given to New.
type Cache struct {
	mu     sync.Mutex
	m      map[string]string
	loader func(string) string
}

// New returns a cache that loads missing keys with loader, under c.mu.
func New(loader func(string) string) *Cache { // want New:"param 0 runs in Get → c.loader while c.mu is held" New:"sets loader"
	return &Cache{m: map[string]string{}, loader: loader}
}

// Get returns the value of key, loading it first if need be.
func (c *Cache) Get(key string) string { // want Get:"calls param 0 field loader \\(c.loader\\)" Get:"locks c.mu: Get → c.mu.Lock"
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[key]; ok {
		return v
	}
	v := c.loader(key)
	c.m[key] = v
	return v
}

// Len is the number of keys loaded.
func (c *Cache) Len() int { // want Len:"locks c.mu: Len → c.mu.Lock"
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
