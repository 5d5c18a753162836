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

// NotifyThenUnlock: the deferred closure calls fn and then unlocks, so fn
// runs at return, under the lock.
func NotifyThenUnlock(o *Obj, fn func()) {
	o.mu.Lock()
	defer func() { // want `deferred call of a func literal \(a closure that calls fn, a parameter\) runs at return while o.mu is held`
		fn()
		o.mu.Unlock()
	}()
}

// DoneVariable: the same closure, deferred through a variable.
func DoneVariable(o *Obj, fn func()) {
	o.mu.Lock()
	done := func() {
		fn()
		o.mu.Unlock()
	}
	defer done() // want `deferred call of done \(a closure that calls fn, a parameter\) runs at return while o.mu is held`
}

// HeldAtReturn returns with the lock held: what it defers runs under it.
func HeldAtReturn(o *Obj, fn func()) { // want HeldAtReturn:"acquires param 0 field mu"
	o.mu.Lock()
	defer fn() // want `deferred call of fn \(a parameter\) runs at return while o.mu is held`
}

// ReleasedOnOnePath: fn runs at a return where the lock is held, and the
// other return released it first.
func ReleasedOnOnePath(o *Obj, fn func(), early bool) {
	defer fn() // want `deferred call of fn \(a parameter\) runs at return while o.mu is held`
	o.mu.Lock()
	if early {
		o.mu.Unlock()
		return
	}
	o.touch()
}

func (o *Obj) touch() {}
