// Package once runs a backend's one-time initialization, as sync.OnceValue
// does (the project's one shape for every one-time init), except that a panic is memoized as an error: every caller, the first
// included, gets a *lazy.PanicError with the panic's value and stack. A
// driver's init that panicked is then never mistaken for success, and never
// panics again in the next caller's goroutine.
package once

import (
	"runtime/debug"
	"sync"

	"github.com/gpuinit/gpuinit/lazy"
)

// Func returns a function that calls f the first time it is called and
// returns f's error then and on every later call; concurrent callers wait for
// the first. A panic in f is returned as a *lazy.PanicError, and
// runtime.Goexit in f as lazy.ErrGoexit.
func Func(f func() error) func() error {
	v := Value(func() (struct{}, error) { return struct{}{}, f() })
	return func() error {
		_, err := v()
		return err
	}
}

// Value is Func for a function that also returns a value. It is
// sync.OnceValues but for the panic: sync.Once marks itself done even when f
// panics or calls runtime.Goexit, and the deferred recover turns the panic
// into the result, where sync.OnceValues would panic again in every caller.
func Value[T any](f func() (T, error)) func() (T, error) {
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
