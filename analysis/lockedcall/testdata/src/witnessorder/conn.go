// Package witnessorder calls a field's function in a locked helper that two
// callers reach, each holding a lock of its own, in two files: the message
// names the caller that comes first in the source, however the files were
// numbered when they were parsed (crypto/tls's Read and HandleData).
package witnessorder

import "sync"

type Conn struct {
	in             sync.Mutex
	handshakeMutex sync.Mutex
	now            func() int64
}

func NewConn(now func() int64) *Conn { return &Conn{now: now} }

func (c *Conn) Read() {
	c.in.Lock()
	defer c.in.Unlock()
	c.handlePost()
}

func (c *Conn) handlePost() {
	c.handleTicket()
}

func (c *Conn) handleTicket() {
	_ = c.now() // want `call of c.now \(a field\) while c.in is held \(handleTicket runs with it held: Read → handlePost → handleTicket\)`
}
