// Package chainuser wraps chainlib's LRU in a lock.
package chainuser

import (
	"chainlib"
	"sort"
	"sync"
)

// Cache passes the caller's callback to the LRU: Add runs it under c.mu.
type Cache struct {
	mu  sync.Mutex
	lru *chainlib.LRU
}

func New(onEvict func(string)) *Cache { return &Cache{lru: chainlib.NewLRU(onEvict)} }

func (c *Cache) Add(key string) { // want Add:"calls param 0 field lru.onEvict \\(Add → removeOldest → l.onEvict\\)" Add:`locks c\.mu: Add → c\.mu\.Lock`
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Add(key) // want `call of c.lru.Add \(it calls c.lru.onEvict, a field: Add → removeOldest → l.onEvict\) while c.mu is held`
	_ = c.lru.Len()
}

// Counted makes its LRU itself, with its own method as the callback: what
// Add calls is visible code.
type Counted struct {
	mu      sync.Mutex
	lru     *chainlib.LRU
	evicted int
}

func NewCounted() *Counted {
	c := &Counted{}
	c.lru = chainlib.NewLRU(c.count)
	return c
}

func (c *Counted) count(string) { c.evicted++ }

func (c *Counted) Add(key string) { // want Add:`locks c\.mu: Add → c\.mu\.Lock`
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Add(key)
}

// Hooks runs the caller's code through sync.Once, whose fact says Do calls
// its argument; sorting with the package's own closure is fine.
type Hooks struct {
	mu   sync.Mutex
	once sync.Once
	keys []string
}

func (h *Hooks) Init(init func()) { // want Init:"calls param 1 \\(Do → doSlow → f\\)" Init:`locks h\.mu: Init → h\.mu\.Lock`
	h.mu.Lock()
	defer h.mu.Unlock()
	h.once.Do(init) // want `call of h.once.Do \(it calls init, a parameter: Do → doSlow → f\) while h.mu is held`
	sort.Slice(h.keys, func(i, j int) bool { return h.keys[i] < h.keys[j] })
}

// A pool the package fills with its own New: Get calls only visible code.
var nodes = sync.Pool{New: func() any { return new(int) }}

func (h *Hooks) Node(p *sync.Pool) { // want Node:"calls param 1 field New \\(Get → p.New\\)" Node:`locks h\.mu: Node → h\.mu\.Lock`
	h.mu.Lock()
	defer h.mu.Unlock()
	_ = nodes.Get()
	_ = p.Get() // want `call of p.Get \(it calls p.New, a field: Get → p.New\) while h.mu is held`
}
