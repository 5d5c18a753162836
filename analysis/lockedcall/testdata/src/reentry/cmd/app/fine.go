package main

import "reentry/internal/cache"

// upper's loader calls nothing that locks: nothing to report.
func upper() *cache.Cache {
	return cache.New(func(key string) string { return key + "!" })
}

// counted's loader calls Len on another cache: a mutex of the same field
// and type. A different instance is reported where the analyzer cannot
// prove it different; here it is one the loader allocates itself.
func counted() *cache.Cache {
	return cache.New(func(key string) string {
		other := new(cache.Cache)
		other.Len()
		return key
	})
}

// async's loader calls Get in a goroutine, which waits for c.mu instead of
// deadlocking the loader.
func async() *cache.Cache {
	var c *cache.Cache
	c = cache.New(func(key string) string {
		go c.Get(key)
		return key
	})
	return c
}
