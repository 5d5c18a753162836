package device

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ErrClosed is returned by a Runtime's calls after Close, and by an
// initialization that Close stopped. It is no initialization failure: its
// class is NoClass.
var ErrClosed = errors.New("device: the Runtime is closed")

// stopping is how Close stops what a Runtime runs in the background besides
// its watches: the preflight's children and the waits between them. Close
// marks it closed and ends ctx, which kills a child under way and ends a
// wait, then waits for each section entered to leave. A section cannot be
// entered once closed, so nothing starts after Close.
type stopping struct {
	closed atomic.Bool
	ctx    context.Context // ends at Close
	cancel context.CancelFunc

	mu       sync.Mutex     // serializes enter with close, so that no section starts while close waits
	sections sync.WaitGroup // sections entered and not yet left
}

func newStopping() *stopping {
	s := &stopping{}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// enter starts a section, or reports false once closed.
func (s *stopping) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return false
	}
	s.sections.Add(1)
	return true
}

// leave ends a section enter started.
func (s *stopping) leave() { s.sections.Done() }

// close marks s closed, ends its ctx, and waits for the sections under way.
func (s *stopping) close() {
	s.mu.Lock()
	s.closed.Store(true)
	s.mu.Unlock()
	s.cancel()
	s.sections.Wait()
}

// bind returns ctx, ended also at close.
func (s *stopping) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { unhook(); cancel() }
}
