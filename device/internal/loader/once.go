package loader

import (
	"runtime/debug"
	"sync"

	"github.com/gpuinit/gpuinit/lazy"
)

// OnceFunc returns a function that calls f the first time it is called and
// returns f's error then and on every later call; concurrent callers wait for
// the first. A panic in f is returned as a *lazy.PanicError, and
// runtime.Goexit in f as lazy.ErrGoexit.
func OnceFunc(f func() error) func() error {
	v := OnceValue(func() (struct{}, error) { return struct{}{}, f() })
	return func() error {
		_, err := v()
		return err
	}
}

// OnceValue is OnceFunc for a function that also returns a value. It is
// sync.OnceValues but for the panic: sync.Once marks itself done even when f
// panics or calls runtime.Goexit, and the deferred recover turns the panic
// into the result, where sync.OnceValues would panic again in every caller.
func OnceValue[T any](f func() (T, error)) func() (T, error) {
	var (
		o   sync.Once
		v   T
		err error = lazy.ErrGoexit // what later callers see if f never returns
	)
	return func() (T, error) {
		o.Do(func() {
			defer func() {
				if p := recover(); p != nil {
					err = &lazy.PanicError{Value: p, Stack: debug.Stack()}
				}
			}()
			v, err = f()
		})
		return v, err
	}
}
