package owned

import (
	"context"
	"sync"
)

// Cancel functions from package context, and what sync.OnceValue wraps, are
// judged by what they call.
type watcher struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	stop   func() bool
}

func newWatcher(ctx context.Context, onDone func()) *watcher {
	w := &watcher{}
	_, w.cancel = context.WithCancel(ctx)
	w.stop = context.AfterFunc(ctx, onDone)
	return w
}

func Watch(ctx context.Context, onDone func()) *watcher { return newWatcher(ctx, onDone) }

var mystery = sync.OnceValue(func() map[string]int { return nil })

func SetMystery(f func() map[string]int) { mystery = f }

var builtins = sync.OnceValue(func() map[string]int { return map[string]int{"len": 1} })

func (w *watcher) Close() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cancel()
	w.stop()
	return builtins()["len"] + mystery()["x"] // want `call of mystery \(a package variable\) while w.mu is held`
}

func OnceUnderLock(w *watcher, f func() int) int {
	g := sync.OnceValue(f)
	w.mu.Lock()
	defer w.mu.Unlock()
	return g() // want `call of g \(a parameter\) while w.mu is held`
}
