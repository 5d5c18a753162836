// Package lockuser calls lockutil's helpers: their facts cross the import.
package lockuser

import "lockutil"

type Service struct {
	g lockutil.Guarded
}

func (s *Service) Run(cb func()) { // want Run:"calls param 0 field g.Fn \\(s.g.Fn\\); calls param 1 \\(cb\\)" Run:`locks g\.mu: Run → Lock → g\.mu\.Lock; locks g\.mu: Run → RLock → g\.mu\.RLock`
	s.g.Lock()
	s.g.Fn() // want `call of s.g.Fn \(a field\) while s.g.mu is held`
	s.g.Unlock()
	cb()
	s.g.RLock()
	cb() // want `call of cb \(a parameter\) while s.g.mu is read-locked`
	s.g.RUnlock()
}

func Global(cb func()) { // want Global:"calls param 0 \\(cb\\)" Global:`locks global: Global → LockGlobal → global\.Lock`
	lockutil.LockGlobal()
	cb() // want `call of cb \(a parameter\) while lockutil.global is held`
	lockutil.UnlockGlobal()
	cb()
}
