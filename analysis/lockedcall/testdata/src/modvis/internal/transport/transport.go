// Package transport returns close and cancel functions it builds itself.
package transport

import "context"

type Conn struct{ closed bool }

// Open returns the connection and a function that closes it.
func Open() (*Conn, func()) { // want Open:"result 1 is visible code"
	c := &Conn{}
	return c, func() { c.closed = true }
}

// Watch returns context.WithCancel's cancel through a helper.
func Watch(ctx context.Context) context.CancelFunc { // want Watch:"result 0 is visible code"
	_, cancel := context.WithCancel(ctx)
	return cancel
}
