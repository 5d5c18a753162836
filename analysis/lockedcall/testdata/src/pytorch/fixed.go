package pytorch

import "sync"

// After the fix, the lock only guards the state: _lazy_call queues under the
// lock, or takes the run-now decision under it and calls after releasing it;
// _lazy_init swaps the queue out under the lock and runs it after releasing.
type fixed struct {
	initializationLock sync.Mutex
	initialized        bool
	initializing       bool
	queuedCalls        []func() error
	cudaInit           func() error
}

func newFixed(cudaInit func() error) *fixed { return &fixed{cudaInit: cudaInit} }

func (t *fixed) LazyCall(callable func() error) error {
	t.initializationLock.Lock()
	runNow := t.initialized
	if !runNow {
		t.queuedCalls = append(t.queuedCalls, callable)
	}
	t.initializationLock.Unlock()
	if runNow {
		return callable()
	}
	return nil
}

func (t *fixed) LazyInit() error {
	t.initializationLock.Lock()
	if t.initialized || t.initializing {
		t.initializationLock.Unlock()
		return nil
	}
	t.initializing = true
	t.initializationLock.Unlock()

	if err := t.cudaInit(); err != nil {
		return err
	}
	for {
		t.initializationLock.Lock()
		queued := t.queuedCalls
		t.queuedCalls = nil
		if len(queued) == 0 {
			t.initialized, t.initializing = true, false
			t.initializationLock.Unlock()
			return nil
		}
		t.initializationLock.Unlock()
		for _, queuedCall := range queued {
			if err := queuedCall(); err != nil {
				return err
			}
		}
	}
}
