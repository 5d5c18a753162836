package device

import "sync"

// runtimeTable is which Runtime each name gets from one registry's Open. It
// is the first made for the name, kept until it shuts down. Auto's Runtime
// also becomes the chosen backend's once it has chosen, unless that name has
// one already.
//
// That is the one way a registry ends up with two Runtimes over one backend.
// Open("cuda") before auto's first Init has chosen, or while it chooses,
// gets a Runtime of its own. Open must not wait for a choice that may take
// as long as a driver's init. Auto must stay free to try hip after cuda. If
// auto then chooses cuda, the two share the backend, whose driver is
// initialized once per process. But each keeps its own queue, devices and
// reports. To have one Runtime, Open by name after the choice, or open ""
// everywhere.
type runtimeTable struct {
	mu     sync.Mutex // protects byName
	byName map[string]*Runtime
}

// get returns name's Runtime, or nil.
func (t *runtimeTable) get(name string) *Runtime {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byName[name]
}

// add gives name the Runtime r, unless another Open gave it one meanwhile,
// or r is closed. It returns the Runtime name has now. Shutdown marks r
// closed before forget takes the lock, so a closed Runtime is never added
// back after forget.
func (t *runtimeTable) add(name string, r *Runtime) *Runtime {
	t.mu.Lock()
	defer t.mu.Unlock()
	if have := t.byName[name]; have != nil {
		return have
	}
	if r.closed() {
		return r
	}
	if t.byName == nil {
		t.byName = map[string]*Runtime{}
	}
	t.byName[name] = r
	return r
}

// forget removes r from every name it has. The next Open of the name makes a
// fresh Runtime, so a Runtime that was shut down is never handed out again.
func (t *runtimeTable) forget(r *Runtime) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, have := range t.byName {
		if have == r {
			delete(t.byName, name)
		}
	}
}
