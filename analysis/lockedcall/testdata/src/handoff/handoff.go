// Package handoff hands callers' code to a goroutine and waits for it while
// the lock is held: the goroutine's calls run under the lock.
package handoff

import "sync"

type Server struct {
	mu     sync.Mutex
	Handle func()
}

// Run waits for the goroutine on a channel it closes.
func (s *Server) Run(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		fn() // want `call of fn \(a parameter\) while s.mu is held \(by the goroutine's starter, which waits for it at line 21\); if fn re-enters, this deadlocks`
		close(done)
	}()
	<-done
}

// Group waits on a WaitGroup the goroutine is Done with.
func (s *Server) Group() {
	var wg sync.WaitGroup
	s.mu.Lock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.Handle() // want `call of s.Handle \(a field\) while s.mu is held \(by the goroutine's starter, which waits for it at line 33\)`
	}()
	wg.Wait()
	s.mu.Unlock()
}

// WaitAfterUnlock waits once the lock is released: fine.
func (s *Server) WaitAfterUnlock(fn func()) {
	s.mu.Lock()
	done := make(chan struct{})
	go func() {
		fn()
		done <- struct{}{}
	}()
	s.mu.Unlock()
	<-done
}

// NoWait does not wait for the goroutine: fine.
func (s *Server) NoWait(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	go fn()
	go func() { fn() }()
}
