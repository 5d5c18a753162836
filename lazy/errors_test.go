package lazy_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/gpuinit/gpuinit/lazy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// errEngine is a caller's own error, which lazy's errors must keep reachable.
var errEngine = errors.New("engine: out of memory")

// matches returns a check that errors.As finds a T in an error.
func matches[T any]() func(error) bool {
	return func(err error) bool { var target T; return errors.As(err, &target) }
}

// TestEverySentinelAndTypeAUserMatchesStillMatches: each of lazy's sentinels
// and error types, produced as a user meets it through the public API,
// still matches errors.Is or errors.As, and so does the caller's own error
// inside it. The table is the list of what users match; a change of the
// errors' shape must keep every row. No sentinel lacks a row.
func TestEverySentinelAndTypeAUserMatchesStillMatches(t *testing.T) {
	ctx := context.Background()
	failing := func(context.Context) error { return errEngine }
	for _, tc := range []struct {
		name    string
		produce func(t *testing.T) error
		is      []error
		as      []func(error) bool
	}{
		{"an init that fails is an *InitError wrapping its error",
			func(t *testing.T) error { return lazy.New(failing).Init(ctx) },
			[]error{errEngine}, []func(error) bool{matches[*lazy.InitError]()}},
		{"a Call after a failed init wraps the memoized *InitError",
			func(t *testing.T) error {
				i := lazy.New(failing)
				require.Error(t, i.Init(ctx))
				return i.Call(ctx, func(context.Context) error { t.Error("ran after a failure"); return nil })
			},
			[]error{errEngine}, []func(error) bool{matches[*lazy.InitError]()}},
		{"a queued call that fails is a *DeferredError from Init",
			func(t *testing.T) error {
				i := lazy.New(func(context.Context) error { return nil })
				require.NoError(t, i.Call(ctx, failing))
				return i.Init(ctx)
			},
			[]error{errEngine}, []func(error) bool{matches[*lazy.DeferredError]()}},
		{"a queued call's failure is a *DeferredError to WithQueuedFailures",
			func(t *testing.T) error {
				var reported error
				i := lazy.New(func(context.Context) error { return nil },
					lazy.WithQueuedFailures(func(e *lazy.DeferredError) { reported = e }))
				require.NoError(t, i.Call(ctx, failing))
				require.NoError(t, i.Init(ctx))
				return reported
			},
			[]error{errEngine}, []func(error) bool{matches[*lazy.DeferredError]()}},
		{"an init that panics with an error is a *PanicError wrapping it",
			func(t *testing.T) error { return lazy.New(func(context.Context) error { panic(errEngine) }).Init(ctx) },
			[]error{errEngine}, []func(error) bool{matches[*lazy.PanicError](), matches[*lazy.InitError]()}},
		{"an init that calls runtime.Goexit is ErrGoexit",
			func(t *testing.T) error {
				return lazy.New(func(context.Context) error { runtime.Goexit(); return nil }).Init(ctx)
			},
			[]error{lazy.ErrGoexit}, []func(error) bool{matches[*lazy.InitError]()}},
		{"Init from inside init is ErrReentrantInit",
			func(t *testing.T) error {
				var inner error
				var i *lazy.Initializer
				i = lazy.New(func(ctx context.Context) error { inner = i.Init(ctx); return nil })
				require.NoError(t, i.Init(ctx))
				return inner
			},
			[]error{lazy.ErrReentrantInit}, nil},
		{"Init with a done ctx wraps the ctx's error",
			func(t *testing.T) error {
				done, cancel := context.WithCancel(ctx)
				cancel()
				return lazy.New(failing).Init(done)
			},
			[]error{context.Canceled}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.produce(t)
			require.Error(t, err)
			for _, s := range tc.is {
				assert.ErrorIs(t, err, s)
			}
			for i, as := range tc.as {
				assert.True(t, as(err), "errors.As target %d: %v", i, err)
			}
		})
	}
}
