// Command tool's exported hooks: no package can import a command, so only
// it sets them, and it sets them to its own code.
package main

import (
	"fmt"
	"sync"
)

// Hooks are the command's hooks; exported, but no other package sees them.
type Hooks struct {
	OnEvent func(string)
}

// Default holds the hooks the command installs.
var Default = &Hooks{OnEvent: logEvent}

// Now is the clock, a hook its tests could set; only the command does.
var Now = func() int64 { return 0 }

func logEvent(s string) { fmt.Println(s) }

type server struct {
	mu    sync.Mutex
	hooks *Hooks
}

func (s *server) emit(e string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks.OnEvent(e)
	_ = Now()
}

// Run is exported; only the command calls it, with its own code.
func Run(mu *sync.Mutex, step func()) {
	mu.Lock()
	defer mu.Unlock()
	step()
}

func main() {
	s := &server{hooks: Default}
	s.emit("start")
	Run(&s.mu, func() { fmt.Println("step") })
}
