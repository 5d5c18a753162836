package lockedcall

import (
	"sort"
	"strings"
)

// heldLock is one mutex that is held at a point of a function.
type heldLock struct {
	path lockPath
	name string // as the source spells it where it was taken, for messages
	read bool   // held by RLock or TryRLock
	// must is true when the mutex is held on every path to the point; reports
	// use the may-set (every lock in the state), facts use only must-locks.
	must bool
	// deferred is true when, on some path, a deferred call will release the
	// mutex as the function returns: the mutex is still held until then, and
	// calls deferred after that release runs before it.
	deferred bool
	// reacquired is true for a lock of the caller's that the function
	// released and took again: it is held, but the function did not take it
	// for its caller, so it is no effect of the function's.
	reacquired bool
}

// releasedLock is a mutex that the function released without taking it first:
// the caller held it. must is true when every path to the point released it.
type releasedLock struct {
	path lockPath
	must bool
}

// lockState is what the dataflow knows at a program point: the mutexes that are
// held on some path to it, and those the function released on behalf of its
// caller. A nil *lockState means "not reached yet". States are never modified
// once shared: transfer functions work on a clone.
type lockState struct {
	held     map[string]heldLock
	released map[string]releasedLock
}

func newLockState() *lockState {
	return &lockState{held: map[string]heldLock{}, released: map[string]releasedLock{}}
}

func (s *lockState) clone() *lockState {
	c := &lockState{
		held:     make(map[string]heldLock, len(s.held)),
		released: make(map[string]releasedLock, len(s.released)),
	}
	for k, v := range s.held {
		c.held[k] = v
	}
	for k, v := range s.released {
		c.released[k] = v
	}
	return c
}

// acquire records that the mutex at p is now held on every path.
func (s *lockState) acquire(p lockPath, name string, read bool) {
	_, callers := s.released[p.key]
	s.held[p.key] = heldLock{path: p, name: name, read: read, must: true, reacquired: callers}
	delete(s.released, p.key)
}

// release records that the mutex at p is no longer held. A mutex the function
// did not take itself was its caller's: that is remembered for the function's
// fact.
func (s *lockState) release(p lockPath) {
	if _, ok := s.held[p.key]; ok {
		delete(s.held, p.key)
		return
	}
	s.released[p.key] = releasedLock{path: p, must: true}
}

// deferRelease records that a deferred call will release the mutex at p when
// the function returns (on every path if must). The mutex stays held until
// then.
func (s *lockState) deferRelease(p lockPath, must bool) {
	if h, ok := s.held[p.key]; ok {
		h.deferred = true
		s.held[p.key] = h
		return
	}
	s.released[p.key] = releasedLock{path: p, must: must}
}

// locks returns every held mutex, sorted by name for stable messages.
func (s *lockState) locks() []heldLock {
	out := make([]heldLock, 0, len(s.held))
	for _, h := range s.held {
		out = append(out, h)
	}
	return sortLocks(out)
}

func sortLocks(locks []heldLock) []heldLock {
	sort.Slice(locks, func(i, j int) bool {
		if locks[i].name != locks[j].name {
			return locks[i].name < locks[j].name
		}
		return locks[i].path.key < locks[j].path.key
	})
	return locks
}

// join merges the state of another path into s (which may be nil) and returns
// the result: held on some path, must-held only where held on both.
func join(s, other *lockState) *lockState {
	if other == nil {
		return s
	}
	if s == nil {
		return other.clone()
	}
	out := s.clone()
	for k, h := range out.held {
		o, ok := other.held[k]
		h.must = h.must && ok && o.must
		h.deferred = h.deferred || (ok && o.deferred)
		h.read = h.read && (!ok || o.read)
		h.reacquired = h.reacquired || (ok && o.reacquired)
		out.held[k] = h
	}
	for k, o := range other.held {
		if _, ok := out.held[k]; !ok {
			o.must = false
			out.held[k] = o
		}
	}
	for k, r := range out.released {
		o, ok := other.released[k]
		r.must = r.must && ok && o.must
		out.released[k] = r
	}
	for k, o := range other.released {
		if _, ok := out.released[k]; !ok {
			o.must = false
			out.released[k] = o
		}
	}
	return out
}

// equal reports whether two states are the same, for the fixpoint.
func equal(a, b *lockState) bool {
	if a == nil || b == nil {
		return a == b
	}
	if len(a.held) != len(b.held) || len(a.released) != len(b.released) {
		return false
	}
	for k, h := range a.held {
		o, ok := b.held[k]
		if !ok || o.must != h.must || o.deferred != h.deferred || o.read != h.read || o.reacquired != h.reacquired {
			return false
		}
	}
	for k, r := range a.released {
		if o, ok := b.released[k]; !ok || o.must != r.must {
			return false
		}
	}
	return true
}

// signature is a compact text form of the state, used to memoize the analysis
// of a closure called in that state.
func (s *lockState) signature() string {
	if len(s.held) == 0 && len(s.released) == 0 {
		return ""
	}
	var b strings.Builder
	for _, h := range s.locks() {
		b.WriteString(h.path.key)
		if h.must {
			b.WriteByte('!')
		}
		if h.deferred {
			b.WriteByte('d')
		}
		if h.read {
			b.WriteByte('r')
		}
		b.WriteByte(';')
	}
	keys := make([]string, 0, len(s.released))
	for k, r := range s.released {
		if r.must {
			k += "!"
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteString(strings.Join(keys, ","))
	return b.String()
}

// describeLocks renders held mutexes for a message: "o.mu is held",
// "o.mu is read-locked", "a.mu and b.mu are held".
func describeLocks(locks []heldLock) string {
	if len(locks) == 1 {
		if locks[0].read {
			return locks[0].name + " is read-locked"
		}
		return locks[0].name + " is held"
	}
	names := make([]string, len(locks))
	for i, h := range locks {
		names[i] = h.name
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " are held"
}
