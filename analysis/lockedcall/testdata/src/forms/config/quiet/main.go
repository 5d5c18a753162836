// Command config, quiet: the loader counts its loads under a mutex of
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
	cache = NewCache(Config{Loader: func(key string) int {
		return 40 + loads.Add()
	}})
	fmt.Println(cache.Get("base"), cache.Get("derived"))
}
