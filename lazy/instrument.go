package lazy

import "sync/atomic"

// The test instrumentation: lock-holder tracking and a hook into Call's slow
// path. Both cost one atomic load or nil check when unused.

// trackLockHolder makes lock and unlock record the holder's goroutine id, so that
// tests can prove that no user code runs while its own goroutine holds the lock.
// Set only by tests, before any Initializer is used.
var trackLockHolder atomic.Bool

// testHookBeforeLock, when set by a test, runs in Call's slow path between the
// unlocked state check and taking the lock.
var testHookBeforeLock func()

func (i *Initializer) lock() {
	i.mu.Lock()
	if trackLockHolder.Load() {
		i.holder.Store(currentGoroutineID())
	}
}

func (i *Initializer) unlock() {
	if trackLockHolder.Load() {
		i.holder.Store(0)
	}
	i.mu.Unlock()
}
