package basic

// DeferAfterUnlock: deferred calls run last-in first-out, so fn runs before
// the unlock.
func DeferAfterUnlock(o *Obj, fn func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	defer fn() // want `deferred call of fn \(a parameter\) runs before the deferred unlock of o.mu; if fn re-enters, this deadlocks`
}

// DeferBeforeUnlock: fn was deferred first, so it runs after the unlock.
func DeferBeforeUnlock(o *Obj, fn func()) {
	defer fn()
	o.mu.Lock()
	defer o.mu.Unlock()
}

// DeferWithExplicitUnlock: fn runs at return, after the explicit unlock.
func DeferWithExplicitUnlock(o *Obj, fn func()) {
	o.mu.Lock()
	defer fn()
	o.mu.Unlock()
}

// DeferredUnlockHolds: a deferred unlock holds the mutex to the end.
func DeferredUnlockHolds(o *Obj, fn func(), cond bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cond {
		return
	}
	fn() // want `call of fn \(a parameter\) while o.mu is held`
}

// DeferredClosureUnlock: an unlock in a deferred closure holds too.
func DeferredClosureUnlock(o *Obj, fn func()) {
	o.mu.Lock()
	defer func() { o.mu.Unlock() }()
	fn()                        // want `call of fn \(a parameter\) while o.mu is held`
	defer func() { o.hook() }() // want `deferred call of a func literal \(a closure that calls o.hook, a field\) runs before the deferred unlock of o.mu`
}

// DeferredClosureThatUnlocksFirst runs fn after its own unlock.
func DeferredClosureThatUnlocksFirst(o *Obj, fn func()) {
	o.mu.Lock()
	defer func() {
		o.mu.Unlock()
		fn()
	}()
}
