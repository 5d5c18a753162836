package basic

// ClosureCallsOutside: the closure runs fn, so calling it under the lock is
// reported where it is called.
func ClosureCallsOutside(o *Obj, fn func()) {
	step := func() {
		fn()
	}
	step()
	o.mu.Lock()
	step() // want `call of step \(a closure that calls fn, a parameter\) while o.mu is held; if fn re-enters, this deadlocks`
	o.mu.Unlock()
}

// ClosureUnlocksFirst: the closure releases the lock before it calls out.
func ClosureUnlocksFirst(o *Obj, fn func()) {
	unlockAndRun := func() {
		o.mu.Unlock()
		fn()
	}
	o.mu.Lock()
	unlockAndRun()
	fn() // released by the closure
}

// ClosureArgument: the closure's parameter is what the call site passes.
func ClosureArgument(o *Obj, fn func()) {
	apply := func(f func()) { f() }
	o.mu.Lock()
	defer o.mu.Unlock()
	apply(helper)
	apply(fn) // want `call of apply \(a closure that calls f, a parameter\) while o.mu is held`
}

// ClosureLocksItself: a closure that takes the lock itself is checked on its own.
func ClosureLocksItself(o *Obj) func() {
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.hook() // want `call of o.hook \(a field\) while o.mu is held`
	}
}

// Recursive closures terminate.
func Recursive(o *Obj, n int) {
	var walk func(int)
	walk = func(k int) {
		if k > 0 {
			walk(k - 1)
		}
	}
	o.mu.Lock()
	walk(n)
	o.mu.Unlock()
}

// MethodValue: a bound method of a concrete type is visible code, and what
// it calls is followed: Run calls its receiver's cb.
func MethodValue(o *Obj, e *Embedded) {
	run := e.Run
	o.mu.Lock()
	run() // want `call of run \(a closure that calls s.cb, a field: Run → s.cb\) while o.mu is held`
	o.mu.Unlock()
	stamp := e.Stamp
	o.mu.Lock()
	stamp()
	o.mu.Unlock()
}

// ClosureWithDeferredUnlock is called twice: each time, its deferred unlock
// releases the lock as it returns, so the next call starts unlocked.
func ClosureWithDeferredUnlock(o *Obj, fns []func()) {
	setup := func() *Obj {
		for _, f := range fns {
			f()
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		return o
	}
	setup()
	setup()
}

// A func literal that initializes a package variable is checked too.
var Handle = func(o *Obj, fn func()) {
	o.mu.Lock()
	fn() // want `call of fn \(a parameter\) while o.mu is held`
	o.mu.Unlock()
}
