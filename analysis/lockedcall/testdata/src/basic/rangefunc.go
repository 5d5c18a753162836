package basic

import "iter"

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
