// Command ctorinit, quiet: the loader counts its loads under a mutex of
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

// NewCache returns a cache that loads missing keys with loader.
func NewCache(loader func(string) int) *Cache {
	return &Cache{items: map[string]int{}, loader: loader}
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

func init() {
	cache = NewCache(func(key string) int {
		return 40 + loads.Add()
	})
}

func main() {
	fmt.Println(cache.Get("base"), cache.Get("derived"))
}
