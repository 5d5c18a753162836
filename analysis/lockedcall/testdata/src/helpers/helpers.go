// Package helpers takes and releases its lock through helper methods, as
// gpuinit's lazy package does; facts carry what they do to their call sites.
package helpers

import "sync"

type Initializer struct {
	mu    sync.Mutex
	track bool
	fn    func()
}

func New(fn func()) *Initializer { return &Initializer{fn: fn} }

func (i *Initializer) lock() { // want lock:"acquires receiver field mu"
	i.mu.Lock()
	if i.track {
		i.fn = nil
	}
}

func (i *Initializer) unlock() { // want unlock:"releases receiver field mu"
	if i.track {
		i.fn = nil
	}
	i.mu.Unlock()
}

// lockBoth goes through another helper.
func lockBoth(a, b *Initializer) { // want lockBoth:"acquires param 0 field mu; acquires param 1 field mu"
	a.lock()
	b.lock()
}

// tryLock acquires on one path only: no fact.
func (i *Initializer) tryLock() bool { return i.mu.TryLock() }

// balanced locks and unlocks: no fact.
func (i *Initializer) balanced() {
	i.lock()
	i.unlock()
}

func (i *Initializer) Call(fn func()) {
	i.lock()
	if i.fn == nil {
		i.unlock()
		fn() // released by the helper
		return
	}
	i.fn() // want `call of i.fn \(a field\) while i.mu is held`
	i.unlock()
	fn()
}

func (i *Initializer) Deferred(fn func()) {
	i.lock()
	defer i.unlock()
	fn() // want `call of fn \(a parameter\) while i.mu is held`
}

func (i *Initializer) DeferredThenFn(fn func()) {
	i.lock()
	defer i.unlock()
	defer fn() // want `deferred call of fn \(a parameter\) runs before the deferred unlock of i.mu`
}

func Both(a, b *Initializer, fn func()) {
	lockBoth(a, b)
	fn() // want `call of fn \(a parameter\) while a.mu and b.mu are held`
	a.unlock()
	b.unlock()
	fn()
}

var registry struct {
	mu   sync.Mutex
	open map[string]func()
}

func lockRegistry() { registry.mu.Lock() } // want lockRegistry:"acquires package variable registry.mu"

func unlockRegistry() { registry.mu.Unlock() } // want unlockRegistry:"releases package variable registry.mu"

func Open(name string) {
	lockRegistry()
	open := registry.open[name]
	if open == nil {
		unlockRegistry()
		return
	}
	open() // want `call of open \(a map or slice element\) while registry.mu is held`
	unlockRegistry()
}

// Nested drops the caller's lock for the duration and takes it back as it
// returns, as testing.B.Run does with benchmarkLock: no net effect, no fact.
func (i *Initializer) Nested(fn func()) {
	i.mu.Unlock()
	defer i.mu.Lock()
	fn()
}

func (i *Initializer) RunNested(fn func()) {
	i.lock()
	i.Nested(fn)
	fn() // want `call of fn \(a parameter\) while i.mu is held`
	i.unlock()
}

// NestedHelper takes the lock back through a deferred helper: no net effect,
// no fact.
func (i *Initializer) NestedHelper(fn func()) {
	i.mu.Unlock()
	defer i.lock()
	fn()
}

func (i *Initializer) RunNestedHelper(fn func()) {
	i.lock()
	i.NestedHelper(fn)
	fn() // want `call of fn \(a parameter\) while i.mu is held`
	i.unlock()
}

// NestedClosure takes the lock back in a deferred closure: no fact either.
func (i *Initializer) NestedClosure(fn func()) {
	i.mu.Unlock()
	defer func() { i.mu.Lock() }()
	fn()
}

func (i *Initializer) RunNestedClosure(fn func()) {
	i.lock()
	i.NestedClosure(fn)
	fn() // want `call of fn \(a parameter\) while i.mu is held`
	i.unlock()
}

// lockLater returns holding the lock, which a deferred helper takes.
func (i *Initializer) lockLater() { // want lockLater:"acquires receiver field mu"
	defer i.lock()
}

// unlockLater releases the caller's lock in a deferred closure.
func (i *Initializer) unlockLater() { // want unlockLater:"releases receiver field mu"
	defer func() { i.mu.Unlock() }()
}

func (i *Initializer) LaterHelpers(fn func()) {
	i.lockLater()
	fn() // want `call of fn \(a parameter\) while i.mu is held`
	i.unlockLater()
	fn()
}

// maybeLockLater locks in a deferred closure on some paths only: no fact.
func (i *Initializer) maybeLockLater(again bool) {
	defer func() {
		if again {
			i.mu.Lock()
		}
	}()
}
