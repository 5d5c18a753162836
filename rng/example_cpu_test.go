package rng_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gpuinit/gpuinit/device"
	_ "github.com/gpuinit/gpuinit/device/backends"
	"github.com/gpuinit/gpuinit/rng"
)

// A server queues its seed before anything touches the GPU, then draws on
// device 0, or, where the host has no GPU, on the CPU: the same values,
// from the same queued seed, with no seed given again. The package doc's
// section "Falling back to the CPU" shows this program.
func Example_fallBackToCPU() {
	ctx := context.Background()
	rt, err := device.Open("") // auto: the first GPU backend that works; touches no driver
	if err != nil {
		log.Fatal(err) // a bad GPUINIT_* setting: fix it, never serve around it
	}
	defer rt.Shutdown(ctx)
	if err := rt.UsePreflight(device.Preflight{}); err != nil { // the driver's init runs in a child first
		log.Fatal(err)
	}
	gens := rng.New(rt)
	if err := gens.ManualSeed(ctx, 0, 42); err != nil { // queued: no driver is loaded yet
		log.Fatal(err)
	}
	values := make([]uint32, 4)
	_, err = rt.DeviceCount(ctx) // the first touch: the child, the driver's init, the queued seed
	switch {
	case device.FallBackToCPU(err): // no GPU here: err says why, Stats and the health status too
		err = gens.GenerateOnHost(ctx, 0, values) // what device 0 would draw
	case err != nil: // a GPU broken or not ready yet: never served around on the CPU
		log.Fatalf("unready (%s): %v", device.ClassOf(err), err)
	default:
		err = gens.Generate(ctx, 0, values)
	}
	fmt.Println(values, err)
	// Output: [2632642643 2012563771 314527917 1463989207] <nil>
}
