package device

import (
	"fmt"

	"github.com/gpuinit/gpuinit/device/driver"
)

// opening is one backend's Open call. done closes when it returns. A failed
// opening is forgotten once done, so that a later open tries again.
type opening struct {
	done chan struct{}
	b    driver.Backend
	err  error
}

// openBackend returns the registry's instance of reg's backend. It calls
// the backend's Open at most once at a time, and never with a lock held.
// Concurrent callers wait on a channel for the call in flight. A success is
// kept for the registry's life. A failure is returned to the callers that
// waited for it, then forgotten.
func (g *Registry) openBackend(reg driver.Registration) (driver.Backend, error) {
	if reg.Open == nil {
		return nil, g.notCompiled(reg.Name, reg, true, false)
	}
	g.mu.Lock()
	o := g.opened[reg.Name]
	if o == nil {
		o = &opening{done: make(chan struct{})}
		if g.opened == nil {
			g.opened = map[string]*opening{}
		}
		g.opened[reg.Name] = o
		g.mu.Unlock()
		g.finishOpening(reg, o)
	} else {
		g.mu.Unlock()
	}
	<-o.done
	return o.b, o.err
}

// finishOpening calls reg.Open and releases o's waiters whatever happens,
// runtime.Goexit included. After a Goexit, the deferred code sees o.err
// still set to the error that says so.
func (g *Registry) finishOpening(reg driver.Registration, o *opening) {
	defer func() {
		g.mu.Lock()
		if o.err != nil {
			delete(g.opened, reg.Name)
		}
		close(o.done)
		g.mu.Unlock()
	}()
	o.err = fmt.Errorf("device: opening backend %s: its Open called runtime.Goexit", reg.Name)
	o.b, o.err = callOpen(reg)
}

// callOpen calls a registration's Open. It turns a panic or a nil backend
// into an error, so that waiters are always released.
func callOpen(reg driver.Registration) (b driver.Backend, err error) {
	defer func() {
		if v := recover(); v != nil {
			b, err = nil, fmt.Errorf("device: opening backend %s: its Open panicked: %v", reg.Name, v)
		}
	}()
	b, err = reg.Open()
	switch {
	case err != nil:
		return nil, fmt.Errorf("device: opening backend %s: %w", reg.Name, err)
	case b == nil:
		return nil, fmt.Errorf("device: opening backend %s: its Open returned no backend and no error", reg.Name)
	}
	return b, nil
}
