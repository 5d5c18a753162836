// Package pytorch transcribes torch/cuda/__init__.py's lazy initialization
// into Go: prefix.go is the discipline before PR #182948, fixed.go after it.
package pytorch

import "sync"

// Before the fix, one non-reentrant lock is held while the queued callbacks
// replay in _lazy_init, and while _lazy_call runs a callback once initialized.
// A callback that calls _lazy_call or _lazy_init deadlocks.
type prefix struct {
	initializationLock sync.Mutex
	initialized        bool
	queuedCalls        []func() error
	cudaInit           func() error // torch._C._cuda_init
}

func newPrefix(cudaInit func() error) *prefix { return &prefix{cudaInit: cudaInit} }

// LazyCall is _lazy_call(callable).
func (t *prefix) LazyCall(callable func() error) error {
	t.initializationLock.Lock()
	defer t.initializationLock.Unlock()
	if t.initialized {
		return callable() // want `call of callable \(a parameter\) while t.initializationLock is held; if callable re-enters, this deadlocks`
	}
	t.queuedCalls = append(t.queuedCalls, callable)
	return nil
}

// LazyInit is _lazy_init().
func (t *prefix) LazyInit() error {
	if t.isInitialized() {
		return nil
	}
	t.initializationLock.Lock()
	defer t.initializationLock.Unlock()
	if t.initialized {
		return nil
	}
	if err := t.cudaInit(); err != nil { // want `call of t.cudaInit \(a field\) while t.initializationLock is held`
		return err
	}
	for _, queuedCall := range t.queuedCalls {
		if err := queuedCall(); err != nil { // want `call of queuedCall \(a map or slice element\) while t.initializationLock is held`
			return err
		}
	}
	t.queuedCalls = nil
	t.initialized = true
	return nil
}

func (t *prefix) isInitialized() bool {
	t.initializationLock.Lock()
	defer t.initializationLock.Unlock()
	return t.initialized
}
