// Package env is a public package of the module whose exported variables
// hold its own readers of the environment (issue 39's second false shape).
package env

import (
	"os"
	"sync"
)

// String returns a reader of the environment variable name.
func String(name string) func() string { // want String:"result 0 is visible code"
	return func() string { return os.Getenv(name) }
}

// Library is only stored by its initializer, with the package's own code:
// its calls under the package's lock are left to whoever assigns it.
var Library = String("APP_LIBRARY") // want Library:"holds visible code" Library:"stored value runs in Load → Library while mu is held"

// Prefix is stored by SetPrefix too, with whatever its caller passes.
var Prefix = String("APP_PREFIX")

// SetPrefix sets Prefix.
func SetPrefix(f func() string) { Prefix = f }

// Region is stored by init, after its initializer.
var Region func() string

func init() { Region = String("APP_REGION") }

var (
	mu     sync.Mutex
	cached string
)

// Load reads the variables once, under mu.
func Load() string { // want Load:"locks mu: Load → mu.Lock"
	mu.Lock()
	defer mu.Unlock()
	if cached == "" {
		prefix := Prefix() // want `call of Prefix \(a package variable\) while mu is held`
		library := Library()
		region := Region() // want `call of Region \(a package variable\) while mu is held`
		cached = prefix + library + region
	}
	return cached
}
