// Command ctorlocal passes its loader to an exported constructor, which
// stores it in a field; the cache is a local variable that the loader
// captures. Loading "derived" needs "base", and Get("base") waits for the
// c.mu that Get("derived") holds: it dies with "all goroutines are asleep".
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

// NewCache returns a cache that loads missing keys with loader.
func NewCache(loader func(string) int) *Cache {
	return &Cache{items: map[string]int{}, loader: loader}
}

func main() {
	var c *Cache
	c = NewCache(func(key string) int {
		if key == "derived" {
			return c.Get("base") + 1
		}
		return 41
	})
	fmt.Println(c.Get("base"), c.Get("derived"))
}
