// Package pool calls, under its locks, what its module passes in through its
// exported API. It cannot see what that is, so it leaves obligations on the
// ways in (Obligations facts) rather than findings.
package pool

import (
	"sync"
	"sync/atomic"

	"oblig/api"
)

type Pool struct {
	mu      sync.Mutex
	onEvict func(string) // stored by New, from its parameter, through newPool
	conns   []*Conn
}

// New stores onEvict, which Evict calls under p.mu.
func New(onEvict func(string)) *Pool { // want New:"param 0 runs in Evict → p.onEvict while p.mu is held" New:"sets onEvict"
	return newPool(onEvict)
}

func newPool(f func(string)) *Pool { return &Pool{onEvict: f} }

func (p *Pool) Evict(key string) { // want Evict:"calls param 0 field onEvict \\(p.onEvict\\)" Evict:`locks p\.mu: Evict → p\.mu\.Lock`
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onEvict(key)
}

// Filter calls fn on each connection under p.mu.
func (p *Pool) Filter(fn func(*Conn) bool) { // want Filter:"calls param 1 \\(fn\\)" Filter:"param 1 runs in Filter → fn while p.mu is held" Filter:`locks p\.mu: Filter → p\.mu\.Lock`
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		fn(c)
	}
}

// Callbacks are metric callbacks, installed by SetCallbacks.
type Callbacks struct {
	Count func(int) // want Count:"stored value runs in Put → cb while p.mu is held"
}

var (
	callbacksMu   sync.RWMutex
	countCallback func(int)
)

// SetCallbacks installs cbs; nil removes them.
func SetCallbacks(cbs *Callbacks) { // want SetCallbacks:`locks callbacksMu: SetCallbacks → callbacksMu\.Lock`
	callbacksMu.Lock()
	defer callbacksMu.Unlock()
	if cbs == nil {
		countCallback = nil
		return
	}
	countCallback = cbs.Count
}

func getCount() func(int) {
	callbacksMu.RLock()
	defer callbacksMu.RUnlock()
	return countCallback
}

// Put adds a connection and counts it, under p.mu.
func (p *Pool) Put(c *Conn) { // want Put:`locks p\.mu: Put → p\.mu\.Lock; locks callbacksMu: Put → getCount → callbacksMu\.RLock`
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
	if cb := getCount(); cb != nil {
		cb(len(p.conns))
	}
}

// Conn holds its close hook in an atomic.Pointer.
type Conn struct {
	onClose atomic.Pointer[func() error]
}

// SetOnClose installs fn, which Close calls.
func (c *Conn) SetOnClose(fn func() error) { // want SetOnClose:"param 1 runs in Drain → Close → \\(\\*fn\\) while p.mu is held"
	if fn == nil {
		c.onClose.Store(nil)
		return
	}
	c.onClose.Store(&fn)
}

// Close runs the close hook, once.
func (c *Conn) Close() error {
	if fn := c.onClose.Swap(nil); fn != nil {
		return (*fn)()
	}
	return nil
}

// Drain closes every connection under p.mu.
func (p *Pool) Drain() { // want Drain:`locks p\.mu: Drain → p\.mu\.Lock`
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// Transport is what the module serves streams on; the module calls its
// HandleStreams, not server's.
type Transport interface {
	HandleStreams(handle func(string)) // want HandleStreams:"param 1 runs in HandleStreams → handle while t.mu is held" HandleStreams:"params \\[1\\] get the module's code"
}

type server struct{ mu sync.Mutex }

// NewTransport returns a Transport.
func NewTransport() Transport { return &server{} }

func (t *server) HandleStreams(handle func(string)) { // want HandleStreams:"calls param 1 \\(handle\\)" HandleStreams:"param 1 runs in HandleStreams → handle while t.mu is held" HandleStreams:`locks t\.mu: HandleStreams → t\.mu\.Lock`
	t.mu.Lock()
	defer t.mu.Unlock()
	handle("stream")
}

// Listener implements api.Notifier, which anyone may call: what it is given
// is from outside, and reported here.
type Listener struct{ mu sync.Mutex }

func (l *Listener) Notify(cb func()) { // want Notify:"calls param 1 \\(cb\\)" Notify:`locks l\.mu: Notify → l\.mu\.Lock`
	l.mu.Lock()
	defer l.mu.Unlock()
	cb() // want `call of cb \(a parameter\) while l.mu is held`
}

type notifier struct{ mu sync.Mutex }

// NewNotifier returns a notifier as an api.Notifier.
func NewNotifier() api.Notifier { return &notifier{} }

func (n *notifier) Notify(cb func()) { // want Notify:"calls param 1 \\(cb\\)" Notify:`locks n\.mu: Notify → n\.mu\.Lock`
	n.mu.Lock()
	defer n.mu.Unlock()
	cb() // want `call of cb \(a parameter\) while n.mu is held`
}

// probe calls HandleStreams through the interface, as the package's tests
// do: with its own closure, which keeps the obligation.
func probe(t Transport) { t.HandleStreams(func(string) {}) }

// Legacy runs fn under its lock on purpose; the directive keeps that here,
// and its callers are not asked again.
func (p *Pool) Legacy(fn func()) { // want Legacy:"calls param 1 \\(fn\\)" Legacy:`locks p\.mu: Legacy → p\.mu\.Lock`
	p.mu.Lock()
	defer p.mu.Unlock()
	fn() //lockedcall:ok the pre-fix discipline, kept on purpose
}
