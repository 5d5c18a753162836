// Command option, quiet: the loader counts its loads under a mutex of
// another type instead of calling Get, and the program runs.
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
	v := c.loader(key)
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

// Counter counts loads under a mutex of its own.
type Counter struct {
	mu sync.Mutex
	n  int
}

// Add counts one load.
func (k *Counter) Add() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.n++
	return k.n
}

var (
	cache *Cache
	loads Counter
)

func main() {
	cache = NewCache(WithLoader(func(key string) int {
		return 40 + loads.Add()
	}))
	fmt.Println(cache.Get("base"), cache.Get("derived"))
}
