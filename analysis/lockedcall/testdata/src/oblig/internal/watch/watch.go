// Package watch declares watcher interfaces that its own code calls, passing
// its own done callbacks: it promises that (a Promises fact), for the
// packages above it that implement them. Its Source's Watch returns a cancel
// function that every implementation it can see builds itself.
package watch

import "sync"

type Watcher interface {
	Changed(v int, done func()) // want Changed:"params \\[2\\] get the module's code"
}

// Leaky's Changed gets what Forward's callers pass: no promise.
type Leaky interface {
	Changed(v int, done func())
}

type Source interface {
	Watch(w Watcher) (cancel func())
}

// Hub is the Source.
type Hub struct {
	mu    sync.Mutex
	ws    []Watcher
	acked int
}

func (h *Hub) Watch(w Watcher) func() { // want Watch:"result 0 is visible code" Watch:`locks h\.mu: Watch → h\.mu\.Lock`
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ws = append(h.ws, w)
	return func() { h.acked = -1 }
}

// Publish tells every watcher, with its own done callback.
func (h *Hub) Publish(v int) {
	for _, w := range h.ws {
		w.Changed(v, func() { h.acked++ })
	}
}

// WatchVia watches through any Source: what the Source returns.
func WatchVia(s Source, w Watcher) func() { // want WatchVia:"result 0 is visible code"
	return s.Watch(w)
}

// Forward passes its caller's done on.
func Forward(l Leaky, done func()) { l.Changed(1, done) }
