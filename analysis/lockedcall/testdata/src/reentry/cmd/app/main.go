// Command app builds a cache whose loader, a closure of main's, calls Get on
// the same cache: loading "b" needs "a", and Get("a") waits for the c.mu that
// Get("b") holds. It dies with "all goroutines are asleep - deadlock!".
package main

import (
	"fmt"

	"reentry/internal/cache"
)

func main() {
	var c *cache.Cache
	c = cache.New(func(key string) string { // want `call of cache.New passes a func literal, which package cache calls while c.mu is held \(cache.go:27\), and it locks it again; deadlocks if it runs: Get → c.loader → \(main's closure\) → Get → c.mu.Lock`
		if key == "b" {
			return c.Get("a") + "b"
		}
		return key
	})
	fmt.Println(c.Get("b"))
}
