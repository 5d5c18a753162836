// Package hooks has the same shape in a package others can import: its
// exported hooks are its API, and whoever imports it may set them.
package hooks

import (
	"fmt"
	"sync"
)

// Hooks are the package's hooks.
type Hooks struct {
	OnEvent func(string)
}

// Default holds the hooks the package installs.
var Default = &Hooks{OnEvent: logEvent}

// Now is the clock; SetClock lets an importer replace it.
var Now = func() int64 { return 0 }

// SetClock sets Now.
func SetClock(now func() int64) { Now = now }

func logEvent(s string) { fmt.Println(s) }

type server struct {
	mu    sync.Mutex
	hooks *Hooks
}

func (s *server) emit(e string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks.OnEvent(e) // want `call of s.hooks.OnEvent \(a field\) while s.mu is held`
	_ = Now()          // want `call of Now \(a package variable\) while s.mu is held`
}

// Run is exported: its callers choose step.
func Run(mu *sync.Mutex, step func()) {
	mu.Lock()
	defer mu.Unlock()
	step() // want `call of step \(a parameter\) while mu is held`
}

func start() {
	s := &server{hooks: Default}
	s.emit("start")
	Run(&s.mu, func() { fmt.Println("step") })
}

var _ = start
