package lazy_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gpuinit/gpuinit/lazy"
)

// A server creates its Initializer at start-up; nothing touches the GPU until
// the first Init. Work requested earlier is queued and replayed right after
// init, in order, and may itself call back into the Initializer.
func Example() {
	gpu := lazy.New(func(ctx context.Context) error {
		fmt.Println("cuInit(0)")
		return nil
	})
	ctx := context.Background()

	// Before init: queued, not run.
	_ = gpu.Call(ctx, func(ctx context.Context) error {
		fmt.Println("manual_seed(42)")
		// Re-entering from a queued callback runs at once instead of hanging.
		return gpu.Call(ctx, func(context.Context) error {
			fmt.Println("set_rng_state")
			return nil
		})
	})
	fmt.Println("state:", gpu.State())

	if err := gpu.Init(ctx); err != nil {
		fmt.Println("init failed:", err)
		return
	}
	fmt.Println("state:", gpu.State())

	// After init: runs at once on the caller's goroutine.
	_ = gpu.Call(ctx, func(context.Context) error {
		fmt.Println("device_count")
		return nil
	})
	// Output:
	// state: uninitialized
	// cuInit(0)
	// manual_seed(42)
	// set_rng_state
	// state: ready
	// device_count
}

// A failed queued call is memoized and names the line that queued it.
func ExampleDeferredError() {
	gpu := lazy.New(nil)
	ctx := context.Background()
	_ = gpu.Call(ctx, func(context.Context) error { return errors.New("invalid seed state") })

	err := gpu.Init(ctx)
	var de *lazy.DeferredError
	if errors.As(err, &de) {
		fmt.Println("queued in ExampleDeferredError:", strings.HasSuffix(de.Site, "lazy_test.ExampleDeferredError"))
		fmt.Println("cause:", de.Err)
	}
	fmt.Println("memoized:", errors.Is(gpu.Init(ctx), de.Err))
	// Output:
	// queued in ExampleDeferredError: true
	// cause: invalid seed state
	// memoized: true
}

// Init from inside init reports ErrReentrantInit instead of waiting for itself.
func ExampleErrReentrantInit() {
	var gpu *lazy.Initializer
	gpu = lazy.New(func(ctx context.Context) error {
		fmt.Println(errors.Is(gpu.Init(ctx), lazy.ErrReentrantInit))
		return nil
	})
	fmt.Println(gpu.Init(context.Background()))
	// Output:
	// true
	// <nil>
}
