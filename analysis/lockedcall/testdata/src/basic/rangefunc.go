package basic

import (
	"iter"
	"sync"
)

// RangeOverParam: the iterator comes from the caller and runs under the lock.
func RangeOverParam(o *Obj, seq iter.Seq[int], fn func(int)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for v := range seq { // want `range over seq \(a parameter\) runs the iterator while o.mu is held; if seq re-enters, this deadlocks`
		fn(v) // want `call of fn \(a parameter\) while o.mu is held`
	}
}

// RangeBodyLocks: a lock taken inside the loop body counts there.
func RangeBodyLocks(o *Obj, seq iter.Seq[func()]) {
	for f := range seq {
		o.mu.Lock()
		f() // want `call of f \(a parameter\) while o.mu is held`
		o.mu.Unlock()
	}
}

// RangeUnlocked: the iterator runs after the unlock.
func RangeUnlocked(o *Obj, seq iter.Seq[int]) {
	o.mu.Lock()
	o.queue = nil
	o.mu.Unlock()
	for range seq {
	}
}

// RangeLocalIterator: an iterator written here is visible code.
func RangeLocalIterator(o *Obj) {
	all := func(yield func(int) bool) {
		for i := range 3 {
			if !yield(i) {
				return
			}
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for v := range all {
		_ = v
	}
}

// Seq is a package-level iterator: visible code, but the loop body still runs
// under the caller's lock.
func Seq(yield func(int) bool) {
	for i := range 3 {
		if !yield(i) {
			return
		}
	}
}

// RangeStaticIterator: the body of a loop over a static iterator is checked
// under the lock held around the loop.
func RangeStaticIterator(o *Obj, fn func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for range Seq {
		fn() // want `call of fn \(a parameter\) while o.mu is held`
	}
}

// RangeStaticIteratorBodyLocks: and under a lock taken in the body.
func RangeStaticIteratorBodyLocks(o *Obj, fn func()) {
	for range Seq {
		o.mu.Lock()
		fn() // want `call of fn \(a parameter\) while o.mu is held`
		o.mu.Unlock()
	}
}

// RangeStaticIteratorInClosure: a closure whose loop body calls fn is not
// self-contained, so calling it under the lock is reported.
func RangeStaticIteratorInClosure(o *Obj, fn func()) {
	each := func() {
		for range Seq {
			fn()
		}
	}
	o.mu.Lock()
	each() // want `call of each \(a closure that calls fn, a parameter\) while o.mu is held`
	o.mu.Unlock()
}

var seqMu sync.Mutex

// lockedSeq holds seqMu after it returns: its effect applies after the loop.
func lockedSeq(yield func(int) bool) { // want lockedSeq:"acquires package variable seqMu"
	yield(0)
	seqMu.Lock()
}

// RangeIteratorEffects: the iterator's own lock effects apply to the caller.
func RangeIteratorEffects(fn func()) {
	for range lockedSeq {
	}
	fn() // want `call of fn \(a parameter\) while seqMu is held`
	seqMu.Unlock()
}

// rangeHook holds a closure whose loop body calls the caller's fn: it is not
// code this package controls.
var rangeHook func()

func SetRangeHook(fn func()) {
	rangeHook = func() {
		for range Seq {
			fn()
		}
	}
}

func CallRangeHook(o *Obj) {
	o.mu.Lock()
	rangeHook() // want `call of rangeHook \(a package variable\) while o.mu is held`
	o.mu.Unlock()
}
