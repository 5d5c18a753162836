// Package depmgr implements watch's interfaces: what watch promises to pass
// to Watcher's Changed is the module's own code, and so is the cancel
// function that watch.WatchVia returns. Leaky has no promise.
package depmgr

import (
	"sync"

	"oblig/internal/watch"
)

type Manager struct {
	mu      sync.Mutex
	stop    func()
	handled int
}

// watcher forwards to the closure stored in its field.
type watcher struct {
	onChange func(int, func())
}

func (w *watcher) Changed(v int, done func()) { // want Changed:"param 2 runs in changed → done while m.mu is held"
	w.onChange(v, done)
}

func New(h *watch.Hub) *Manager {
	m := &Manager{}
	w := &watcher{onChange: func(v int, done func()) { m.changed(v, done) }}
	m.stop = watch.WatchVia(h, w)
	return m
}

func (m *Manager) changed(v int, done func()) { // want changed:"calls param 2 \\(done\\)"
	m.mu.Lock()
	defer m.mu.Unlock()
	defer done()
	m.handled = v
}

func (m *Manager) Close() { // want Close:`locks m\.mu: Close → m\.mu\.Lock`
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stop()
}

type leaky struct{ mu sync.Mutex }

func (l *leaky) Changed(v int, done func()) { // want Changed:"calls param 2 \\(done\\)" Changed:`locks l\.mu: Changed → l\.mu\.Lock`
	l.mu.Lock()
	defer l.mu.Unlock()
	done() // want `call of done \(a parameter\) while l.mu is held`
}

// Leak returns a leaky as a watch.Leaky.
func Leak() watch.Leaky { return &leaky{} }
