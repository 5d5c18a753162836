// Package cond takes its mutex through a sync.Cond's L: the two are one lock.
package cond

import "sync"

type Queue struct {
	mu    sync.Mutex
	cond  *sync.Cond
	items []int
	onPop func()
}

func New(onPop func()) *Queue {
	q := &Queue{onPop: onPop}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Pop locks through the Cond, waits, and unlocks the mutex itself: the
// callback runs after the unlock.
func (q *Queue) Pop() int {
	q.cond.L.Lock()
	for len(q.items) == 0 {
		q.cond.Wait()
	}
	v := q.items[0]
	q.items = q.items[1:]
	q.mu.Unlock()
	q.onPop()
	return v
}

// PopHeld calls the callback before the unlock, which goes through the L.
func (q *Queue) PopHeld() {
	q.mu.Lock()
	for len(q.items) == 0 {
		q.cond.Wait()
	}
	q.onPop() // want `call of q.onPop \(a field\) while q.mu is held`
	q.cond.L.Unlock()
	q.onPop()
}

// Local makes its Cond in the function.
func Local(fn func()) {
	var mu sync.Mutex
	c := sync.NewCond(&mu)
	c.L.Lock()
	fn() // want `call of fn \(a parameter\) while mu is held`
	mu.Unlock()
	fn()
}

// Literal builds the Cond as a struct literal.
func Literal(fn func()) {
	var mu sync.Mutex
	c := &sync.Cond{L: &mu}
	mu.Lock()
	c.Wait()
	c.L.Unlock()
	fn()
}
