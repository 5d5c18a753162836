// Package lockedhelper calls callers' code in helpers that run with the lock
// held: it is reported once, in the helper, naming a caller that holds it.
package lockedhelper

import "sync"

type Store struct {
	mu       sync.Mutex
	keyFunc  func(any) string
	onUpdate func(string)
	items    map[string]any
}

func NewStore(keyFunc func(any) string, onUpdate func(string)) *Store {
	return &Store{keyFunc: keyFunc, onUpdate: onUpdate, items: map[string]any{}}
}

func (s *Store) Add(obj any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updateLocked(obj)
}

func (s *Store) Update(obj any) {
	s.mu.Lock()
	s.updateLocked(obj)
	s.mu.Unlock()
}

// updateLocked is named for the lock its callers hold.
func (s *Store) updateLocked(obj any) {
	key := s.keyFunc(obj) // want `call of s.keyFunc \(a field\) while s.mu is held \(updateLocked runs with it held: Add → updateLocked\); if s.keyFunc re-enters, this deadlocks`
	s.items[key] = obj
	s.notify(key)
}

// notify is only called from a locked helper, so it runs under the lock too.
func (s *Store) notify(key string) {
	s.onUpdate(key) // want `call of s.onUpdate \(a field\) while s.mu is held \(notify runs with it held: Add → updateLocked → notify\)`
}

// reindex must be called with s.mu held.
func (s *Store) reindex(obj any) {
	_ = s.keyFunc(obj) // want `call of s.keyFunc \(a field\) while a lock is held \(reindex is documented to run with it held\)`
}

// eachLocked runs the caller's function: the callers' calls report what
// they pass.
func (s *Store) eachLocked(fn func(string)) {
	for k := range s.items {
		fn(k)
	}
}

func (s *Store) Each(fn func(string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eachLocked(fn) // want `call of s.eachLocked \(it calls fn, a parameter: eachLocked → fn\) while s.mu is held`
	s.eachLocked(func(string) {})
}

// snapshot releases the caller's lock before it calls out.
func (s *Store) snapshot() {
	s.mu.Unlock()
	s.onUpdate("")
	s.mu.Lock()
}

func (s *Store) Snapshot() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snapshot()
}

// start is documented: "s.mu is held". The goroutine it starts does not hold
// the lock, so what it runs is no locked helper's.
func (s *Store) start() {
	go s.work()
	go func() { s.work() }()
}

func (s *Store) work() { s.onUpdate("work") }

func (s *Store) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start()
}
