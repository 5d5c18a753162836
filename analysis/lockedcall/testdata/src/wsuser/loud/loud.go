// want package:"calls setters \\(\\*example.com/ws.Conn\\).SetPongHandler, interface method SetPongHandler}$"

// Package loud imports a package of its module that sets the pong handler
// to its caller's code: the handler may be anyone's, and the read under the
// lock is reported.
package loud

import (
	"sync"

	"example.com/ws"
	_ "wsuser/setter"
)

type Reader struct {
	mu sync.Mutex
	c  *ws.Conn
}

func (r *Reader) Read() error { // want Read:"locks r.mu: Read → r.mu.Lock" Read:"calls param 0 field c.handlePong \\(NextReader → c.handlePong\\) unless set by"
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.c.NextReader() // want `call of r.c.NextReader \(it calls r.c.handlePong, a field: NextReader → c.handlePong\) while r.mu is held`
}

// pinger sets handlers through an interface.
type pinger interface {
	SetPongHandler(func(string) error)
}

// Local sets the handler through an interface: that counts too.
func Local(p pinger, h func(string) error) {
	p.SetPongHandler(h)
}
