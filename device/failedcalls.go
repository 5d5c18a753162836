package device

import (
	"slices"
	"sync"

	"github.com/gpuinit/gpuinit/lazy"
)

// maxFailedCalls bounds the queued calls' failures a Runtime keeps: the first
// ones, which say the most; the rest are counted.
const maxFailedCalls = 16

// failedCalls are the failures of calls queued before initialization, each
// its own call's (see LazyCall).
type failedCalls struct {
	mu      sync.Mutex // protects following fields
	kept    []*lazy.DeferredError
	dropped int
}

// add records one; lazy calls it on the initialization's goroutine.
func (f *failedCalls) add(d *lazy.DeferredError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.kept) == maxFailedCalls {
		f.dropped++
		return
	}
	f.kept = append(f.kept, d)
}

// FailedCalls lists the calls queued before initialization that failed when
// they ran, in the order they ran, each with the call site that queued it
// and its error (a *lazy.PanicError for a panic): the first 16, and how many
// more failed. Their failures are their own: the initialization succeeded.
// It never blocks on initialization.
func (r *Runtime) FailedCalls() (calls []*lazy.DeferredError, more int) {
	r.failedCalls.mu.Lock()
	defer r.failedCalls.mu.Unlock()
	return slices.Clone(r.failedCalls.kept), r.failedCalls.dropped
}
