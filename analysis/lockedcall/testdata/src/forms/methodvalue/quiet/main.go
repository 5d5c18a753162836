// Command methodvalue, quiet: s.load counts its loads under a mutex of
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

// Store derives keys from others through its cache.
type Store struct {
	cache *Cache
	loads Counter
}

// load is the store's loader: "derived" is one more than "base".
func (s *Store) load(key string) int {
	if key == "derived" {
		return 41 + s.loads.Add()
	}
	return 41
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

func main() {
	s := &Store{}
	s.cache = NewCache(s.load)
	fmt.Println(s.cache.Get("base"), s.cache.Get("derived"))
}
