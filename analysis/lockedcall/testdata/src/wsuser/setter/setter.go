// want package:"calls setters \\(\\*example.com/ws.Conn\\).SetPongHandler}$"

// Package setter lets its caller's handler into the dependency's field.
package setter

import "example.com/ws"

// OnPong sets the connection's pong handler to the caller's.
func OnPong(c *ws.Conn, h func(string) error) {
	c.SetPongHandler(h)
}
