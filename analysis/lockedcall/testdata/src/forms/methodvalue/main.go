// Command methodvalue gives a method value, s.load, as the loader; load
// calls Get on the store's cache: it dies with "all goroutines are asleep".
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
	v := c.loader(key) // want `call of c.loader while c.mu is held locks it again; deadlocks if it runs: Get → c.loader → load → Get → c.mu.Lock`
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
}

// load is the store's loader: "derived" is one more than "base".
func (s *Store) load(key string) int {
	if key == "derived" {
		return s.cache.Get("base") + 1
	}
	return 41
}

func main() {
	s := &Store{}
	s.cache = NewCache(s.load)
	fmt.Println(s.cache.Get("base"), s.cache.Get("derived"))
}
