// Package legacy reproduces the discipline of PyTorch's lazy initialization
// before PR #182948, for tests, benchmarks and gpuprobe's -discipline legacy:
// one plain, non-reentrant sync.Mutex is held while init runs, while the queued
// callbacks replay, and while a callback runs after initialization. Any callback
// that re-enters Call or Init on the same Initializer therefore deadlocks, as
// torch.cuda did. Never use it for real work.
package legacy

import (
	"context"
	"sync"
)

// Func has the shape of lazy.Func; it is declared here because this package
// does not import lazy, so that lazy's own tests can use it.
type Func = func(ctx context.Context) error

// Initializer has lazy.Initializer's Init and Call, with the pre-fix locking.
type Initializer struct {
	init  Func
	mu    sync.Mutex
	ready bool
	err   error
	queue []Func
}

// New returns a pre-fix Initializer that runs init on the first Init.
func New(init Func) *Initializer { return &Initializer{init: init} }

// Init runs init and then the queue, holding the lock throughout.
func (l *Initializer) Init(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ready || l.err != nil {
		return l.err
	}
	if l.init != nil {
		//lockedcall:ok the pre-fix discipline, kept to show the hang: init runs under the lock
		if l.err = l.init(ctx); l.err != nil {
			return l.err
		}
	}
	for _, fn := range l.queue {
		//lockedcall:ok the pre-fix discipline: queued callbacks replay under the lock
		if l.err = fn(ctx); l.err != nil {
			return l.err
		}
	}
	l.queue = nil
	l.ready = true
	return nil
}

// Call runs fn under the lock when initialized, else queues it.
func (l *Initializer) Call(ctx context.Context, fn Func) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ready {
		return fn(ctx) //lockedcall:ok the pre-fix discipline: a callback runs under the lock and must not re-enter
	}
	l.queue = append(l.queue, fn)
	return nil
}
