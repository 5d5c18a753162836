// Command setter is issue 39's second program: a hook set through a setter
// method pushes onto the queue whose Push holds q.mu and calls the hook. It
// dies with "all goroutines are asleep - deadlock!".
package main

import (
	"fmt"
	"sync"
)

// Queue keeps the values pushed, and calls its hook on each, under q.mu.
type Queue struct {
	mu   sync.Mutex
	vals []int
	hook func(int)
}

// SetHook sets the hook Push calls.
func (q *Queue) SetHook(hook func(int)) { q.hook = hook }

// Push appends v and calls the hook on it, under q.mu.
func (q *Queue) Push(v int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.vals = append(q.vals, v)
	if q.hook != nil {
		q.hook(v) // want `call of q.hook while q.mu is held locks it again; deadlocks if it runs: Push → q.hook → \(main's closure\) → Push → q.mu.Lock`
	}
}

func main() {
	q := &Queue{}
	q.SetHook(func(v int) {
		if v < 3 {
			q.Push(v + 1)
		}
	})
	q.Push(1)
	fmt.Println(q.vals)
}
