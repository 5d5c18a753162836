// Package lockutil exports lock helpers that another package calls.
package lockutil

import "sync"

type Guarded struct {
	mu sync.RWMutex
	Fn func()
}

func (g *Guarded) Lock() { g.mu.Lock() } // want Lock:"acquires receiver field mu" Lock:`locks g\.mu: Lock → g\.mu\.Lock`

func (g *Guarded) Unlock() { g.mu.Unlock() } // want Unlock:"releases receiver field mu"

func (g *Guarded) RLock() { g.mu.RLock() } // want RLock:"acquires receiver field mu \\(read\\)" RLock:`locks g\.mu: RLock → g\.mu\.RLock`

func (g *Guarded) RUnlock() { g.mu.RUnlock() } // want RUnlock:"releases receiver field mu"

var global sync.Mutex

func LockGlobal() { global.Lock() } // want LockGlobal:"acquires package variable global" LockGlobal:`locks global: LockGlobal → global\.Lock`

func UnlockGlobal() { global.Unlock() } // want UnlockGlobal:"releases package variable global"
