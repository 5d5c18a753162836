// Package suppress covers the directives that silence a reviewed finding.
package suppress

import "sync"

type Table struct {
	mu   sync.Mutex
	read func(string) int
}

func New(read func(string) int) *Table { return &Table{read: read} }

func SameLine(t *Table, key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.read(key) //lockedcall:ok read is set at construction to a pure lookup
}

func LineAbove(t *Table, key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	//lockedcall:ok read is set at construction to a pure lookup
	return t.read(key)
}

func TwoLinesAbove(t *Table, key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	//lockedcall:ok too far away to count

	return t.read(key) // want `call of t.read \(a field\) while t.mu is held`
}

func Bare(t *Table, key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.read(key) /* want `//lockedcall:ok needs a reason` */ //lockedcall:ok
}

func Nolint(t *Table, key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.read(key) //nolint:lockedcall // reviewed: read never locks
	n += t.read(key) //nolint:errcheck,lockedcall
	n += t.read(key) //nolint:errcheck // want `call of t.read \(a field\) while t.mu is held`
	return n
}

func NotADirective(t *Table, key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.read(key) //lockedcall:okay // want `call of t.read \(a field\) while t.mu is held`
}
