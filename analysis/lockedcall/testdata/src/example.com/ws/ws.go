// Package ws is a dependency of another module (its path has a dot), shaped
// as gorilla/websocket's Conn: its constructor fills the pong handler with its
// own default, and SetPongHandler is the only way to change it.
package ws

// Conn is a connection.
type Conn struct {
	handlePong func(string) error
	// OnFrame is exported: anyone may store in it.
	OnFrame func()
}

// NewConn returns a connection with the default pong handler.
func NewConn() *Conn {
	c := &Conn{}
	c.SetPongHandler(nil)
	return c
}

// SetPongHandler sets the pong handler; nil restores the default.
func (c *Conn) SetPongHandler(h func(string) error) { // want SetPongHandler:"sets handlePong"
	if h == nil {
		h = func(string) error { return nil }
	}
	c.handlePong = h
}

// NextReader reads a frame, calling the pong handler.
func (c *Conn) NextReader() error { // want NextReader:"calls param 0 field handlePong \\(c.handlePong\\) unless set by \\(\\*example.com/ws.Conn\\).SetPongHandler$"
	return c.handlePong("")
}

// NextFrame calls the exported hook.
func (c *Conn) NextFrame() { // want NextFrame:"calls param 0 field OnFrame \\(c.OnFrame\\)$"
	c.OnFrame()
}
