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

// markClosed marks s closed: no section starts from now on.
func (s *stopping) markClosed() {
	s.mu.Lock()
	s.closed.Store(true)
	s.mu.Unlock()
}

// close marks s closed, ends its ctx, and waits for the sections under way
// until wait ends; it reports whether they all left. A preflight child is
// killed at once and reaped within its bounds, so its section always leaves
// soon: the goroutine that waits for them ends then.
func (s *stopping) close(wait context.Context) bool {
	s.markClosed()
	s.cancel()
	left := make(chan struct{})
	go func() {
		s.sections.Wait()
		close(left)
	}()
	select {
	case <-left:
		return true
	case <-wait.Done():
		return false
	}
}

// inFlight counts the calls into the devices' drivers under way, so that
// Shutdown waits for them: two atomic operations per call, and a signal
// only once the Runtime is closed.
type inFlight struct {
	n       atomic.Int64
	closed  atomic.Bool
	drained chan struct{} // a token when the count fell to 0 after close
}

// enter counts a call in, or refuses it once closed.
func (f *inFlight) enter() bool {
	f.n.Add(1)
	if f.closed.Load() {
		f.leave()
		return false
	}
	return true
}

// leave counts a call out.
func (f *inFlight) leave() {
	if f.n.Add(-1) == 0 && f.closed.Load() {
		select {
		case f.drained <- struct{}{}:
		default:
		}
	}
}

// wait closes f and waits until no call is in flight or ctx ends, and
// returns how many were still in flight.
func (f *inFlight) wait(ctx context.Context) int64 {
	f.closed.Store(true)
	for {
		n := f.n.Load()
		if n <= 0 {
			return 0
		}
		select {
		case <-f.drained:
		case <-ctx.Done():
			return f.n.Load()
		}
	}
}

// bind returns ctx, ended also at close.
func (s *stopping) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { unhook(); cancel() }
}
