package device

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
)

// EnvBackend names the backend Open("") picks; unset or empty means "auto".
const EnvBackend = "GPUINIT_BACKEND"

// gpuBackends are the names "auto" tries, in order, with the build tag that
// compiles each in.
var gpuBackends = []struct{ name, tag string }{{"cuda", "cuda"}, {"hip", "hip"}}

var registry struct {
	mu       sync.Mutex
	openers  map[string]func() (Backend, error)
	runtimes map[string]*Runtime
}

// Register makes a backend available to Open under name. Backends call it from
// an init function. It panics if name is empty or "auto", if open is nil, or if
// name is already registered, as database/sql.Register does: these are
// programming errors, found at start-up.
func Register(name string, open func() (Backend, error)) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	switch {
	case name == "" || name == "auto":
		panic(fmt.Sprintf("device: Register: %q is not a backend name", name))
	case open == nil:
		panic("device: Register: nil opener for backend " + name)
	case registry.openers[name] != nil:
		panic("device: Register: backend " + name + " registered twice")
	}
	if registry.openers == nil {
		registry.openers = map[string]func() (Backend, error){}
		registry.runtimes = map[string]*Runtime{}
	}
	registry.openers[name] = open
}

// Backends lists the registered backend names, sorted.
func Backends() []string {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	var names []string
	for n := range registry.openers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Open returns the process's one Runtime for the named backend, creating it on
// first use. It never initializes anything and makes no driver call. The name ""
// reads GPUINIT_BACKEND, and falls back to "auto": the first GPU backend compiled
// in, cuda then hip. A backend that is not compiled in gets an error wrapping
// ErrNotCompiled that names its build tag. If the backend's opener fails (a bad
// configuration), nothing is cached and a later Open tries again.
func Open(name string) (*Runtime, error) {
	if name == "" {
		name = strings.TrimSpace(os.Getenv(EnvBackend))
	}
	if name == "" {
		name = "auto"
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if name == "auto" {
		for _, b := range gpuBackends {
			if registry.openers[b.name] != nil {
				name = b.name
				break
			}
		}
		if name == "auto" {
			return nil, fmt.Errorf("%w: no GPU backend in this binary (auto tries cuda, then hip); build with -tags cuda or -tags hip, or use backend sim", ErrNotCompiled)
		}
	}
	if r := registry.runtimes[name]; r != nil {
		return r, nil
	}
	open := registry.openers[name]
	if open == nil {
		for _, b := range gpuBackends {
			if b.name == name {
				return nil, fmt.Errorf("%w: backend %s: build with -tags %s (and CGO_ENABLED=1)", ErrNotCompiled, name, b.tag)
			}
		}
		var known []string
		for n := range registry.openers {
			known = append(known, n)
		}
		slices.Sort(known)
		return nil, fmt.Errorf("device: unknown backend %q; known: auto, cuda, hip, sim; compiled in: %s", name, strings.Join(known, ", "))
	}
	b, err := open()
	if err != nil {
		return nil, fmt.Errorf("device: opening backend %s: %w", name, err)
	}
	r := New(b)
	registry.runtimes[name] = r
	return r, nil
}
