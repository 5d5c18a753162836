// Command setter, quiet: the hook counts the values pushed under a mutex of
// another type instead of pushing, and the program runs.
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
		q.hook(v)
	}
}

// Counter counts loads under a mutex of its own.
type Counter struct {
	mu sync.Mutex
	n  int
}

// Add counts one load.
func (k *Counter) Add() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.n++
	return k.n
}

func main() {
	var pushed Counter
	q := &Queue{}
	q.SetHook(func(int) { pushed.Add() })
	q.Push(1)
	fmt.Println(q.vals, pushed.Add())
}
