package device

import (
	"fmt"
	"sync"
)

var registry struct {
	mu          sync.Mutex                         // protects following fields
	openers     map[string]func() (Backend, error) // by name, from Register
	unavailable map[string]string                  // by name: why this build lacks it
	opened      map[string]*opening                // backends opened, or being opened
	runtimes    map[string]*Runtime                // by name: the Runtime Open returns
	gpu         *Runtime                           // the process's GPU runtime, once made
}

// opening is one backend's opener call: done closes when it returns. A failed
// opening is forgotten once done, so that a later open tries again.
type opening struct {
	done chan struct{}
	b    Backend
	err  error
}

// openBackend returns the process's instance of backend name, calling its
// opener at most once at a time and never with a lock held: concurrent callers
// wait for the call in flight on a channel. A success is kept for the
// process; a failure is returned to the callers that waited for it and then
// forgotten.
func openBackend(name string) (Backend, error) {
	registry.mu.Lock()
	o := registry.opened[name]
	if o == nil {
		open := registry.openers[name]
		if open == nil {
			registry.mu.Unlock()
			return nil, checkAvailable(name)
		}
		o = &opening{done: make(chan struct{})}
		if registry.opened == nil {
			registry.opened = map[string]*opening{}
		}
		registry.opened[name] = o
		registry.mu.Unlock()
		finishOpening(name, o, open)
	} else {
		registry.mu.Unlock()
	}
	<-o.done
	return o.b, o.err
}

// finishOpening calls the opener and releases o's waiters whatever happens,
// runtime.Goexit included: the deferred code then sees o.err still set to the
// error that says so.
func finishOpening(name string, o *opening, open func() (Backend, error)) {
	defer func() {
		registry.mu.Lock()
		if o.err != nil {
			delete(registry.opened, name)
		}
		close(o.done)
		registry.mu.Unlock()
	}()
	o.err = fmt.Errorf("device: opening backend %s: the opener called runtime.Goexit", name)
	o.b, o.err = callOpener(name, open)
}

// callOpener calls a registered opener, turning its panic or a nil backend
// into an error, so that waiters are always released.
func callOpener(name string, open func() (Backend, error)) (b Backend, err error) {
	defer func() {
		if v := recover(); v != nil {
			b, err = nil, fmt.Errorf("device: opening backend %s: the opener panicked: %v", name, v)
		}
	}()
	b, err = open()
	switch {
	case err != nil:
		return nil, fmt.Errorf("device: opening backend %s: %w", name, err)
	case b == nil:
		return nil, fmt.Errorf("device: opening backend %s: the opener returned no backend and no error", name)
	}
	return b, nil
}
