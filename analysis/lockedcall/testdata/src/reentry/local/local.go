// Package local has re-entries within one package: a method that holds its
// mutex and calls one that takes it, through a helper, a method value, a
// hook set in init, and an RWMutex; and the shapes that are not one.
package local

import "sync"

type Cache struct {
	mu      sync.Mutex
	statsMu sync.Mutex
	m       map[string]int
	kids    []*Cache
	onMiss  func(string) int
	onStats func()
	loader  Loader
}

// Loader is an interface: what implements it is not followed.
type Loader interface{ Load(string) int }

func NewCache(l Loader) *Cache {
	c := &Cache{m: map[string]int{}, loader: l}
	c.onMiss = c.reload
	c.onStats = c.stats
	return c
}

func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Put holds c.mu and calls Len, which takes it.
func (c *Cache) Put(k string, v int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[k] = v
	if c.Len() > 100 { // want `call of c.Len while c.mu is held locks it again; deadlocks if it runs: Put → Len → c.mu.Lock`
		clear(c.m)
	}
}

// Trim gets there through a helper.
func (c *Cache) Trim() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evict() // want `call of c.evict while c.mu is held locks it again; deadlocks if it runs: Trim → evict → full → Len → c.mu.Lock`
}

func (c *Cache) evict() {
	if c.full() {
		clear(c.m)
	}
}

func (c *Cache) full() bool { return c.Len() > 100 }

func (c *Cache) reload(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

// Get calls the method value NewCache stored in c.onMiss: c.reload.
func (c *Cache) Get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[k]; ok {
		return v
	}
	return c.onMiss(k) // want `call of c.onMiss while c.mu is held locks it again; deadlocks if it runs: Get → c.onMiss → reload → c.mu.Lock`
}

func (c *Cache) stats() {
	c.statsMu.Lock()
	defer c.statsMu.Unlock()
}

// Stats locks another field's mutex: nothing to report.
func (c *Cache) Stats() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats()
}

// Report calls the method value c.stats, which locks another field's mutex.
func (c *Cache) Report() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onStats()
}

// Unlocked lets go of c.mu before it calls Len.
func (c *Cache) Unlocked() int {
	c.mu.Lock()
	n := len(c.m)
	c.mu.Unlock()
	return n + c.Len()
}

// Async calls Len in a goroutine, which waits for the lock.
func (c *Cache) Async() {
	c.mu.Lock()
	defer c.mu.Unlock()
	go c.Len()
}

// Sizes calls Len on its children: the same field of the same type, but
// not, as far as the analyzer can prove, the same mutex.
func (c *Cache) Sizes() (n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.kids {
		n += k.Len()
	}
	fresh := &Cache{}
	return n + fresh.Len()
}

// Load goes through an interface: the implementation is not followed, even
// where it is this package's own (self below).
func (c *Cache) Load(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loader.Load(k)
}

type self struct{ c *Cache }

func (s self) Load(string) int { return s.c.Len() }

// Wait gives the caller's lock up while it calls Len, and takes it back.
func (c *Cache) waitLocked() int {
	c.mu.Unlock()
	defer c.mu.Lock()
	return c.Len()
}

func (c *Cache) Wait() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waitLocked()
}

var (
	regMu    sync.Mutex
	registry = map[string]int{}
	hook     func(string)
)

func init() {
	hook = func(name string) { Register(name + "-alias") }
}

// Register calls the hook that init set, which calls Register again.
func Register(name string) {
	regMu.Lock()
	defer regMu.Unlock()
	registry[name]++
	if hook != nil {
		hook(name) // want `call of hook while regMu is held locks it again; deadlocks if it runs: Register → hook → \(init's closure\) → Register → regMu.Lock`
	}
}

type Store struct {
	mu sync.RWMutex
	n  int
}

func (s *Store) set(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n = n
}

func (s *Store) get() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.n
}

// Bump read-locks s.mu and calls set, which write-locks it.
func (s *Store) Bump() {
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.set(s.n + 1) // want `call of s.set while s.mu is read-locked locks it again; deadlocks if it runs: Bump → set → s.mu.Lock`
}

// Twice read-locks s.mu and calls get, which read-locks it again: a writer
// that waits between the two blocks the second RLock (sync.RWMutex's doc).
func (s *Store) Twice() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.get() // want `call of s.get while s.mu is read-locked read-locks it again; deadlocks if it runs while a writer waits: Twice → get → s.mu.RLock`
}
