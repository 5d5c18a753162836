// Package envtable reads settings under its lock through a table of its
// own environment-variable readers: not callbacks.
package envtable

import (
	"os"
	"strings"
	"sync"
)

// lookups are where a setting may come from, in order: the package fills
// the table with its own readers, and nobody else can reach it.
var lookups = []func(string) (string, bool){os.LookupEnv, lookupFile}

// readers are keyed by source name, filled by the package only.
var readers = map[string]func(string) string{"env": os.Getenv, "upper": upperEnv}

func lookupFile(key string) (string, bool) { return "", false }

func upperEnv(key string) string { return os.Getenv(strings.ToUpper(key)) }

type Config struct {
	mu    sync.Mutex
	cache map[string]string
}

// lookup is the helper the chain ends in.
func lookup(key string) string {
	for _, l := range lookups {
		if v, ok := l(key); ok {
			return v
		}
	}
	return readers["env"](key)
}

func (c *Config) Get(key string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.cache[key]; ok {
		return v
	}
	v := lookup(key)
	c.cache[key] = v
	return v
}

// sinks holds what callers of AddSink give it: from outside.
var sinks []func(string)

// AddSink adds the caller's function to the table.
func AddSink(f func(string)) { sinks = append(sinks, f) }

// Sources is exported: whoever imports the package may store in it.
var Sources = map[string]func(string) string{"env": os.Getenv}

// shared is handed to a function, which may store anything in it.
var shared = []func(string) string{os.Getenv}

func fill(t []func(string) string) { _ = t }

func init() { fill(shared) }

func (c *Config) Notify(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range sinks {
		s(key) // want `call of s \(a map or slice element\) while c.mu is held`
	}
	Sources["env"](key) // want `call of Sources\["env"\] \(a map or slice element\) while c.mu is held`
	shared[0](key)      // want `call of shared\[0\] \(a map or slice element\) while c.mu is held`
}
