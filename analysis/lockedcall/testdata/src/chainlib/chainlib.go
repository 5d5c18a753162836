// Package chainlib is a cache without a lock whose eviction callback another
// package's locking wrapper reaches.
package chainlib

type LRU struct {
	onEvict func(key string)
	items   map[string]int
}

func NewLRU(onEvict func(string)) *LRU { // want NewLRU:"sets onEvict"
	return &LRU{onEvict: onEvict, items: map[string]int{}}
}

func (l *LRU) Add(key string) { // want Add:"calls param 0 field onEvict \\(removeOldest → l.onEvict\\)"
	l.items[key] = 1
	l.removeOldest()
}

func (l *LRU) removeOldest() { // want removeOldest:"calls param 0 field onEvict \\(l.onEvict\\)"
	for key := range l.items {
		delete(l.items, key)
		l.onEvict(key)
		return
	}
}

// Len calls nothing.
func (l *LRU) Len() int { return len(l.items) }
