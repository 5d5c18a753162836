// Package owned covers function values that only this package can set, and
// sets to code it wrote: they are not from outside.
package owned

import (
	"sync"
	"time"
)

type Conn struct {
	mu          sync.Mutex
	handshakeFn func() error // only ever c.clientHandshake or c.serverHandshake
	onClose     func()       // set from a caller's argument
	escaping    func()       // its address is handed out
}

func (c *Conn) clientHandshake() error { return nil }
func (c *Conn) serverHandshake() error { return nil }

func Client(onClose func()) *Conn {
	c := &Conn{onClose: onClose}
	c.handshakeFn = c.clientHandshake
	return c
}

func Server() *Conn {
	c := &Conn{}
	c.handshakeFn = c.serverHandshake
	setFunc(&c.escaping)
	return c
}

func setFunc(p *func()) { *p = func() {} }

func (c *Conn) Handshake() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.escaping() // want `call of c.escaping \(a field\) while c.mu is held`
	return c.handshakeFn()
}

func (c *Conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onClose() // want `call of c.onClose \(a field\) while c.mu is held`
}

// Test hooks: nil or set to static code here (tests may set them too).
var (
	nowFunc        = time.Now
	testHookLocked func()
	Exported       = time.Now
)

func (c *Conn) Stamp() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if testHookLocked != nil {
		testHookLocked()
	}
	// Reported where facts are off, as in this test; with facts, only the
	// initializer stores Exported, and the call is left to whoever assigns
	// it (the pubvar fixture).
	_ = Exported() // want `call of Exported \(a package variable\) while c.mu is held`
	return nowFunc()
}

type state struct{ seed uint64 }

type device struct {
	mu    sync.Mutex
	state state
}

// mutate is rng's shape: an unexported helper that runs its argument under a
// device's lock. Every caller passes a closure that only writes the state.
func (d *device) mutate(apply func(*state)) {
	d.mu.Lock()
	apply(&d.state)
	d.mu.Unlock()
}

func (d *device) Seed(seed uint64) { d.mutate(func(s *state) { s.seed = seed }) }

func (d *device) Reset() { d.mutate(func(s *state) { *s = state{} }) }

// visit runs its argument under the lock too, but one caller hands it code
// from outside.
func (d *device) visit(fn func(*state)) {
	d.mu.Lock()
	fn(&d.state) // want `call of fn \(a parameter\) while d.mu is held`
	d.mu.Unlock()
}

func (d *device) Inspect(f func(uint64)) {
	d.visit(func(s *state) { f(s.seed) })
}

func (d *device) Clear() { d.visit(func(s *state) { s.seed = 0 }) }

// forward passes its own parameter on: visit's argument comes from outside.
func (d *device) Forward(fn func(*state)) { d.visit(fn) }

// Guarded replaces a caller's callback with its own before storing it, when
// there is one: the parameter only flows on where it is nil.
type Guarded struct {
	mu      sync.Mutex
	onEvict func()
}

func NewGuarded(onEvict func()) *Guarded {
	g := &Guarded{}
	if onEvict != nil {
		onEvict = g.evicted
	}
	g.onEvict = onEvict
	return g
}

func (g *Guarded) evicted() {}

func (g *Guarded) Evict() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.onEvict != nil {
		g.onEvict()
	}
}

// A test override that restores the hook through a deferred func literal's
// parameter: the argument is the hook itself.
func OverrideForTest() {
	defer func(saved func() time.Time) { nowFunc = saved }(nowFunc)
	nowFunc = func() time.Time { return time.Time{} }
}

// Events keeps handlers it wraps itself in a map: they are visible code; a
// map it fills with the caller's functions is not.
type Events struct {
	mu      sync.RWMutex
	wrapped map[int]func()
	raw     map[int]func()
	wg      sync.WaitGroup
	nextID  int
}

func NewEvents() *Events {
	return &Events{wrapped: map[int]func(){}, raw: make(map[int]func())}
}

func (e *Events) On(fn func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nextID++
	e.wrapped[e.nextID] = func() {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			fn()
		}()
	}
	e.raw[e.nextID] = fn
}

func (e *Events) Fire() {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, fn := range e.wrapped {
		fn()
	}
	e.wrapped[1]()
	for _, fn := range e.raw {
		fn() // want `call of fn \(a map or slice element\) while e.mu is read-locked`
	}
}

// Collected copies the wrapped handlers into a slice of its own and calls
// them from there: still visible code. Appending a caller's value is not.
func (e *Events) Collected(extra func()) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var fns []func()
	for _, fn := range e.wrapped {
		fns = append(fns, fn)
	}
	for _, fn := range fns {
		fn()
	}
	more := append(fns, extra)
	for _, fn := range more {
		fn() // want `call of fn \(a parameter\) while e.mu is read-locked`
	}
}
