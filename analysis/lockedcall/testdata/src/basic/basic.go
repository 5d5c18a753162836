// Package basic covers what lockedcall reports about plain calls: the origins
// of function values, control flow around the lock, and the mutex kinds.
package basic

import (
	"maps"
	"sync"
)

type Obj struct {
	mu       sync.Mutex
	rw       sync.RWMutex
	hook     func()
	handlers map[string]func()
	queue    []func()
}

var onEvent func()

// The fields and the package variable hold code from the callers of these.
func NewObj(hook func(), handlers map[string]func()) *Obj {
	return &Obj{hook: hook, handlers: handlers}
}

func SetOnEvent(f func()) { onEvent = f }

func NewEmbedded(cb func()) *Embedded { return &Embedded{cb: cb} }

func newHook() func() { return onEvent }

func Param(o *Obj, fn func()) {
	o.mu.Lock()
	fn() // want `call of fn \(a parameter\) while o.mu is held; if fn re-enters, this deadlocks`
	o.mu.Unlock()
	fn() // after the unlock: fine
}

func Field(o *Obj) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.hook() // want `call of o.hook \(a field\) while o.mu is held`
}

func Elements(o *Obj, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.handlers[name]() // want `call of o.handlers\[name\] \(a map or slice element\) while o.mu is held`
	for _, f := range o.queue {
		f() // want `call of f \(a map or slice element\) while o.mu is held`
	}
}

func PackageVar(o *Obj) {
	o.mu.Lock()
	onEvent() // want `call of onEvent \(a package variable\) while o.mu is held`
	o.mu.Unlock()
}

func CallResult(o *Obj) {
	o.mu.Lock()
	newHook()() // want `call of newHook\(\) \(the result of a call\) while o.mu is held`
	o.mu.Unlock()
}

// Spilled parameters, reassigned locals and phis keep their origin.
func Captured(o *Obj, fn func(), local bool) {
	g := func() {}
	if !local {
		g = fn
	}
	o.mu.Lock()
	g() // want `call of g \(a parameter\) while o.mu is held`
	o.mu.Unlock()
	_ = func() { fn() }
}

// Static calls, local closures that call nothing from outside, and go
// statements are not reported.
func NotReported(o *Obj, fn func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	helper()
	inc := func() { o.queue = nil }
	inc()
	func() { helper() }()
	go fn()
	go o.hook()
}

func helper() {}

// EarlyReturnUnlocked: the early-return branch unlocks and returns; the call
// after the final unlock is not under the lock.
func EarlyReturnUnlocked(o *Obj, fn func(), cond bool) {
	o.mu.Lock()
	if cond {
		o.mu.Unlock()
		fn() // released on this path
		return
	}
	o.mu.Unlock()
	fn()
}

// EarlyReturnHeld: a branch that returns early must not hide the call made
// under the lock on the other path.
func EarlyReturnHeld(o *Obj, fn func(), cond bool) error {
	o.mu.Lock()
	if cond {
		o.mu.Unlock()
		return nil
	}
	fn() // want `call of fn \(a parameter\) while o.mu is held`
	o.mu.Unlock()
	return nil
}

// ConditionalLock: held on some path is enough.
func ConditionalLock(o *Obj, fn func(), lock bool) {
	if lock {
		o.mu.Lock()
	}
	fn() // want `call of fn \(a parameter\) while o.mu is held`
	if lock {
		o.mu.Unlock()
	}
}

func Loop(o *Obj, fns []func()) {
	for _, f := range fns {
		o.mu.Lock()
		o.queue = append(o.queue, f)
		o.mu.Unlock()
		f()
	}
}

type Embedded struct {
	sync.Mutex
	cb func()
}

func (s *Embedded) Run() {
	s.Lock()
	s.cb() // want `call of s.cb \(a field\) while s is held`
	s.Unlock()
	s.cb()
}

// Stamp calls nothing from outside.
func (s *Embedded) Stamp() int { return len(s.name()) }

func (s *Embedded) name() string { return "embedded" }

func TryLock(o *Obj, fn func()) {
	if o.mu.TryLock() {
		fn() // want `call of fn \(a parameter\) while o.mu is held`
		o.mu.Unlock()
	}
	fn()
	if !o.mu.TryLock() {
		fn() // the lock was not taken
		return
	}
	defer o.mu.Unlock()
	fn() // want `call of fn \(a parameter\) while o.mu is held`
}

func ReadLock(o *Obj, fn func()) {
	o.rw.RLock()
	fn() // want `call of fn \(a parameter\) while o.rw is read-locked`
	o.rw.RUnlock()
	if o.rw.TryRLock() {
		defer o.rw.RUnlock()
		fn() // want `call of fn \(a parameter\) while o.rw is read-locked`
	}
}

func TwoLocks(a, b *Obj, fn func()) {
	a.mu.Lock()
	b.mu.Lock()
	fn() // want `call of fn \(a parameter\) while a.mu and b.mu are held`
	b.mu.Unlock()
	a.mu.Unlock()
}

func LocalMutex(fn func()) {
	var mu sync.Mutex
	mu.Lock()
	fn() // want `call of fn \(a parameter\) while mu is held`
	mu.Unlock()
}

// Locker covers sync.Cond's L, a sync.Locker.
func Locker(c *sync.Cond, fn func()) {
	c.L.Lock()
	fn() // want `call of fn \(a parameter\) while c.L is held`
	c.L.Unlock()
}

// Iterators from std constructors over no function values are visible code.
func StdIterator(o *Obj) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for name := range maps.Keys(o.handlers) {
		_ = name
	}
}
