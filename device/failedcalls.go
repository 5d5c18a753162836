package device

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/gpuinit/gpuinit/lazy"
)

// maxFailedCalls bounds the queued calls' failures a Runtime keeps. It keeps
// the first ones, which say the most, and counts the rest.
const maxFailedCalls = 16

// failedCalls are the failures of calls queued before initialization. Each
// is its own call's (see LazyCall). They are published for Stats without a
// lock.
type failedCalls struct {
	mu      sync.Mutex // serializes add
	kept    atomic.Pointer[[]*lazy.DeferredError]
	dropped atomic.Int64
}

// add records one failure. lazy calls it on the initialization's goroutine.
func (f *failedCalls) add(d *lazy.DeferredError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var kept []*lazy.DeferredError
	if p := f.kept.Load(); p != nil {
		kept = *p
	}
	if len(kept) == maxFailedCalls {
		f.dropped.Add(1)
		return
	}
	next := append(kept[:len(kept):len(kept)], d)
	f.kept.Store(&next)
}

// snapshot is what add has kept, shared, and how many more failed.
func (f *failedCalls) snapshot() ([]*lazy.DeferredError, int) {
	var kept []*lazy.DeferredError
	if p := f.kept.Load(); p != nil {
		kept = *p
	}
	return kept, int(f.dropped.Load())
}

// queuedCallFailed records a queued call's failure, and logs it with the
// call site through the Runtime's logger: its caller was never told, since
// LazyCall had returned nil when it queued it. lazy calls it on the
// initialization's goroutine.
func (r *Runtime) queuedCallFailed(d *lazy.DeferredError) {
	r.failedCalls.add(d)
	slog.New(runtimeHandler{r}).LogAttrs(context.Background(), slog.LevelWarn,
		"gpuinit: a call queued before initialization failed when it ran; the initialization and the other calls went on",
		slog.String("backend", r.Name()), slog.String("site", d.Site), slog.Any("err", d.Err))
}
