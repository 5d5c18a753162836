package device_test

import (
	"context"
	"fmt"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/sim" // or _ device/backends, for every backend
	"github.com/gpuinit/gpuinit/lazy"
)

// Open is cheap and touches no driver; the first query initializes.
func ExampleOpen() {
	rt, err := device.Open("sim") // "" reads GPUINIT_BACKEND, else auto: cuda, then hip
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("initialized:", (rt.Stats().State == lazy.Ready))
	n, err := rt.DeviceCount(context.Background())
	if err != nil {
		fmt.Println(err) // e.g. cuda: cuInit failed: CUDA_ERROR_NO_DEVICE (100): ...
		return
	}
	fmt.Println("devices:", n, "initialized:", (rt.Stats().State == lazy.Ready))
	// Output:
	// initialized: false
	// devices: 2 initialized: true
}

// LazyCall queues work until the first initialization, then runs it at once.
func ExampleRuntime_LazyCall() {
	rt := device.New(sim.New())
	ctx := context.Background()
	_ = rt.LazyCall(ctx, func(context.Context) error {
		fmt.Println("runs right after the driver's init")
		return nil
	})
	fmt.Println("queued; initialized:", (rt.Stats().State == lazy.Ready))
	if err := rt.Init(ctx); err != nil {
		fmt.Println(err)
	}
	_ = rt.LazyCall(ctx, func(context.Context) error {
		fmt.Println("runs now")
		return nil
	})
	// Output:
	// queued; initialized: false
	// runs right after the driver's init
	// runs now
}
