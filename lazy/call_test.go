package lazy_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/lazy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestACallRefusedAfterAFailureSaysLazyOnce: Call's refusal after a failed
// initialization, or after a queued call's failure, says lazy's prefix
// once, then the memoized failure.
func TestACallRefusedAfterAFailureSaysLazyOnce(t *testing.T) {
	ctx := context.Background()
	engine := errors.New("engine: out of memory")
	fails := func(context.Context) error { return engine }
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) *lazy.Initializer
		want  string
	}{
		{"after init failed", func(t *testing.T) *lazy.Initializer {
			i := lazy.New(fails)
			require.Error(t, i.Init(ctx))
			return i
		}, "lazy: call not run: initialization failed: engine: out of memory"},
		{"after a queued call failed", func(t *testing.T) *lazy.Initializer {
			i := lazy.New(func(context.Context) error { return nil })
			require.NoError(t, i.Call(ctx, fails))
			require.Error(t, i.Init(ctx))
			return i
		}, "lazy: call not run: call queued at call_test.go:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.setup(t).Call(ctx, func(context.Context) error { t.Error("ran after a failure"); return nil })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "lazy: lazy:")
			assert.Equal(t, 1, strings.Count(err.Error(), "lazy: "), "%q", err)
			assert.ErrorIs(t, err, engine)
		})
	}
}
