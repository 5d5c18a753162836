// Command ctorinit sets its cache, a package variable, in init, with a
// loader that calls Get on it. It dies with "all goroutines are asleep".
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
	v := c.loader(key) // want `call of c.loader while c.mu is held locks it again; deadlocks if it runs: Get → c.loader → \(init's closure\) → Get → c.mu.Lock`
	c.items[key] = v
	return v
}

// NewCache returns a cache that loads missing keys with loader.
func NewCache(loader func(string) int) *Cache {
	return &Cache{items: map[string]int{}, loader: loader}
}

var cache *Cache

func init() {
	cache = NewCache(func(key string) int {
		if key == "derived" {
			return cache.Get("base") + 1
		}
		return 41
	})
}

func main() {
	fmt.Println(cache.Get("base"), cache.Get("derived"))
}
