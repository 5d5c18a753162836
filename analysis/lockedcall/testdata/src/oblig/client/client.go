// Package client uses the module's internal pool: what it passes that is its
// own code is fine; what comes from its own callers is reported where it
// passes it.
package client

import (
	"oblig/internal/pool"
	"oblig/internal/relay"
)

type Client struct {
	p *pool.Pool
}

func (c *Client) evicted(key string) {}

func (c *Client) keep(*pool.Conn) bool { return true }

// New passes its own method value: nothing to report.
func New() *Client {
	c := &Client{}
	c.p = pool.New(c.evicted)
	return c
}

// NewWith passes its caller's callback.
func NewWith(onEvict func(string)) *pool.Pool {
	return pool.New(onEvict) // want `call of pool.New passes onEvict \(a parameter\), which package pool calls while p.mu is held \(pool.go:\d+: Evict → p.onEvict\); if onEvict re-enters, this deadlocks`
}

// Sweep passes its own code.
func (c *Client) Sweep() { // want Sweep:`locks p\.mu: Sweep → Filter → p\.mu\.Lock`
	c.p.Filter(func(*pool.Conn) bool { return true })
	c.p.Filter(c.keep)
}

// Relay passes its caller's callback on through relay.
func Relay(f func(string)) *pool.Pool {
	relay.Watch(func(string) {})
	return relay.Watch(f) // want `call of relay.Watch passes f \(a parameter\), which package pool calls while p.mu is held \(pool.go:\d+: through pool.New; Evict → p.onEvict\)`
}

// Metrics stores its own callback, and then its caller's.
func Metrics(user func(int)) { // want Metrics:`locks callbacksMu: Metrics → SetCallbacks → callbacksMu\.Lock`
	pool.SetCallbacks(&pool.Callbacks{Count: func(int) {}})
	pool.SetCallbacks(&pool.Callbacks{
		Count: user, // want `user \(a parameter\) is stored in pool.Callbacks.Count, which package pool calls while p.mu is held \(pool.go:\d+: Put → cb\)`
	})
	cbs := &pool.Callbacks{}
	cbs.Count = func(n int) { user(n) } // want `a func literal \(a closure that calls user, a parameter\) is stored in pool.Callbacks.Count, .*; if user re-enters, this deadlocks`
	pool.SetCallbacks(cbs)
}

// UseLegacy passes its caller's function to a call its package reviewed.
func UseLegacy(p *pool.Pool, f func()) { p.Legacy(f) } // want UseLegacy:"calls param 1 \\(Legacy → fn\\)" UseLegacy:`locks p\.mu: UseLegacy → Legacy → p\.mu\.Lock`

// Serve hands the transport its own handler, and then its caller's.
func Serve(t pool.Transport, h func(string)) {
	t.HandleStreams(func(string) {})
	t.HandleStreams(h) // want `call of t.HandleStreams passes h \(a parameter\), which package pool calls while t.mu is held`
}

// Closing installs its own close hook, and then its caller's.
func Closing(cn *pool.Conn, cb func() error) {
	cn.SetOnClose(func() error { return nil })
	cn.SetOnClose(cb) // want `call of cn.SetOnClose passes cb \(a parameter\), which package pool calls while p.mu is held \(pool.go:\d+: Drain → Close → \(\*fn\)\)`
}
