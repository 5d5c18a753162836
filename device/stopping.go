package device

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ErrClosed is returned by a Runtime's calls after [Runtime.Shutdown], and by
// an initialization that Shutdown stopped. It is no initialization failure:
// its class is [NoClass].
var ErrClosed = errors.New("device: the Runtime is closed")

// stopping is how Shutdown stops what a Runtime runs in the background
// besides its watches: the preflight's children and the waits between them.
// Shutdown marks it closed and ends ctx. That kills a child under way and
// ends a wait. Shutdown then waits for each section entered to leave. A
// section cannot be entered once closed, so nothing starts after Shutdown.
type stopping struct {
	closed atomic.Bool
	ctx    context.Context // ends at close
	cancel context.CancelFunc

	mu       sync.Mutex     // serializes enter with close: no section starts while close waits
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
// until wait ends. It reports whether they all left. A preflight child is
// killed at once and reaped within its bounds. So its section always leaves
// soon, and the goroutine that waits for the sections ends then.
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
// Shutdown can wait for them. A call costs two atomic operations. It sends a
// signal only once the Runtime is closed.
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

// wait closes f and waits until no call is in flight or ctx ends. It
// returns how many calls were still in flight.
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
