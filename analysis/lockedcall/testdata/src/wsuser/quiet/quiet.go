// Package quiet reads a dependency's connection under its lock and never sets
// its pong handler: the handler is the dependency's own default.
package quiet

import (
	"sync"

	"example.com/ws"
)

type Reader struct {
	mu sync.Mutex
	c  *ws.Conn
}

func (r *Reader) Read() error { // want Read:"locks r.mu: Read → r.mu.Lock$"
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.c.NextReader()
}

// Frame still calls what the exported field holds, which anyone may set.
func (r *Reader) Frame() { // want Frame:"locks r.mu: Frame → r.mu.Lock" Frame:"calls param 0 field c.OnFrame \\(NextFrame → c.OnFrame\\)$"
	r.mu.Lock()
	defer r.mu.Unlock()
	r.c.NextFrame() // want `call of r.c.NextFrame \(it calls r.c.OnFrame, a field: NextFrame → c.OnFrame\) while r.mu is held`
}

// Restore passes nil, which the setter replaces with its default.
func Restore(c *ws.Conn) {
	c.SetPongHandler(nil)
}
