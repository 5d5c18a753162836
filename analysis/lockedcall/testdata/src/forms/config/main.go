// Command config gives its loader in a config struct's field. The loader
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

// Config configures a cache.
type Config struct {
	// Loader loads a missing key; nil loads zeros.
	Loader func(string) int
}

// NewCache returns a cache configured by cfg.
func NewCache(cfg Config) *Cache {
	c := &Cache{items: map[string]int{}, loader: cfg.Loader}
	if c.loader == nil {
		c.loader = loadZero
	}
	return c
}

func loadZero(string) int { return 0 }

var cache *Cache

func main() {
	cache = NewCache(Config{Loader: func(key string) int {
		if key == "derived" {
			return cache.Get("base") + 1
		}
		return 41
	}})
	fmt.Println(cache.Get("base"), cache.Get("derived"))
}
