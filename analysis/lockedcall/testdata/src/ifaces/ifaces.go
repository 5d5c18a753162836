// Package ifaces is checked with -interfaces: interface method calls on
// parameters, fields and package variables under a lock are reported.
package ifaces

import (
	"context"
	"errors"
	"io"
	"sync"
)

type Server struct {
	mu  sync.Mutex
	out io.Writer
	fn  func()
}

var sink io.Writer

func New(out io.Writer, fn func()) *Server { return &Server{out: out, fn: fn} }

func SetSink(w io.Writer) { sink = w }

func (s *Server) Init(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := ctx.Err(); err != nil { // want `call of ctx.Err \(an interface method; the receiver is a parameter\) while s.mu is held`
		return err
	}
	s.out.Write(nil) // want `call of s.out.Write \(an interface method; the receiver is a field\) while s.mu is held`
	sink.Write(nil)  // want `call of sink.Write \(an interface method; the receiver is a package variable\) while s.mu is held`
	s.fn()           // want `call of s.fn \(a field\) while s.mu is held`
	var w io.Writer = &buffer{}
	w.Write(nil) // the dynamic type is known here
	err := errors.New("x")
	_ = err.Error() // a value made here
	return nil
}

func (s *Server) Deferred(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer ctx.Err() // want `deferred call of ctx.Err \(an interface method; the receiver is a parameter\) runs before the deferred unlock of s.mu`
}

func (s *Server) Unlocked(ctx context.Context) error {
	s.mu.Lock()
	s.fn() // want `call of s.fn \(a field\) while s.mu is held`
	s.mu.Unlock()
	return ctx.Err()
}

type buffer struct{}

func (*buffer) Write(p []byte) (int, error) { return len(p), nil }
