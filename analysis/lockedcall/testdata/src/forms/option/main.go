// Command option gives its loader through a functional option. The loader
// calls Get on the cache: it dies with "all goroutines are asleep".
package main

import (
	"fmt"
	"sync"
)

// Cache loads each key once, with its loader, under c.mu.
type Cache struct {
	mu     sync.Mutex
	items  map[string]int
	loader func(string) int
}

// Get returns the value of key, loading it under c.mu if need be.
func (c *Cache) Get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.items[key]; ok {
		return v
	}
	v := c.loader(key) // want `call of c.loader while c.mu is held locks it again; deadlocks if it runs: Get → c.loader → \(main's closure\) → Get → c.mu.Lock`
	c.items[key] = v
	return v
}

// Option configures a cache.
type Option func(*Cache)

// WithLoader sets the cache's loader.
func WithLoader(loader func(string) int) Option {
	return func(c *Cache) { c.loader = loader }
}

// NewCache returns a cache configured by opts; it loads zeros by default.
func NewCache(opts ...Option) *Cache {
	c := &Cache{items: map[string]int{}, loader: func(string) int { return 0 }}
	for _, o := range opts {
		o(c)
	}
	return c
}

var cache *Cache

func main() {
	cache = NewCache(WithLoader(func(key string) int {
		if key == "derived" {
			return cache.Get("base") + 1
		}
		return 41
	}))
	fmt.Println(cache.Get("base"), cache.Get("derived"))
}
