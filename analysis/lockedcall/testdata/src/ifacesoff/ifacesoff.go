// Package ifacesoff is ifaces checked without -interfaces: only function values
// are reported.
package ifacesoff

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
	if err := ctx.Err(); err != nil {
		return err
	}
	s.out.Write(nil)
	sink.Write(nil)
	s.fn() // want `call of s.fn \(a field\) while s.mu is held`
	var w io.Writer = &buffer{}
	w.Write(nil) // the dynamic type is known here
	err := errors.New("x")
	_ = err.Error() // a value made here
	return nil
}

func (s *Server) Deferred(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer ctx.Err()
}

func (s *Server) Unlocked(ctx context.Context) error {
	s.mu.Lock()
	s.fn() // want `call of s.fn \(a field\) while s.mu is held`
	s.mu.Unlock()
	return ctx.Err()
}

type buffer struct{}

func (*buffer) Write(p []byte) (int, error) { return len(p), nil }
