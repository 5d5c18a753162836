package loader

import (
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/gpuinit/gpuinit/lazy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAPanicIsMemoizedAsThatPanicsError(t *testing.T) {
	calls := 0
	f := OnceFunc(func() error { calls++; panic("negative device count") })
	var errs [3]error
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = f() })
	}
	wg.Wait()
	for _, err := range errs {
		var pe *lazy.PanicError
		require.ErrorAs(t, err, &pe, "every caller gets the panic as an error, never success")
		assert.Equal(t, "negative device count", pe.Value)
		assert.Contains(t, string(pe.Stack), "once_test.go", "the stack is where it panicked")
	}
	assert.Equal(t, 1, calls, "the function ran once")
}

func TestAnErrorOrSuccessIsMemoized(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		err  error
	}{{"failure", boom}, {"success", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			f := OnceValue(func() (int, error) { calls++; return 7, tc.err })
			for range 3 {
				v, err := f()
				assert.Equal(t, 7, v)
				assert.Equal(t, tc.err, err)
			}
			assert.Equal(t, 1, calls)
		})
	}
}

func TestGoexitIsMemoizedAsErrGoexit(t *testing.T) {
	f := OnceFunc(func() error { runtime.Goexit(); return nil })
	done := make(chan error)
	go func() {
		defer func() { done <- f() }() // the second call, after the first's Goexit
		_ = f()
	}()
	assert.ErrorIs(t, <-done, lazy.ErrGoexit)
}
