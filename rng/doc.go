// Package rng keeps per-device Philox generator state, like torch.cuda.random.
//
// [Generators] has the semantics and the bytes of torch.cuda.random:
// [Generators.ManualSeed], [Generators.Seed], [Generators.InitialSeed],
// [Generators.State]/[Generators.SetState] and their …All forms, and
// [Generators.Generate]. Before the device runtime is initialized, the
// mutating calls are queued through [device.Runtime.LazyCall] in the order
// made, without coalescing or reordering, and replayed right after the
// driver's init; reads initialize first, as torch does. Arguments are
// validated when a call is made, so a bad call is refused at once and never
// queued; a state is applied whole or not at all.
//
// What can be known only at initialization (an ordinal beyond the devices
// found, a state per device for another count) fails that queued call alone.
// The initialization succeeds and the calls queued after it apply. The
// failure is its own: the runtime records it with the call site that queued
// it ([device.Stats].FailedCalls, the health status), and no other call
// returns it. [Generators] is shared by every request of a server, so one
// request's bad ordinal must not fail another's next call, as a buffered
// writer's next Write would. PyTorch raises such a failure from whatever
// call initializes and leaves the queue to be re-run, so one bad call stops
// every caller.
//
// Where the initialization finds no GPU ([device.FallBackToCPU]), the
// Generators move onto the CPU: the calls queued before it apply to the
// states drawn there, in order, and [Generators.GenerateOnHost] draws the
// stream the device would have drawn, with no seed given again. [Host] is
// the same stream for a program with no device.Runtime at all.
//
// # Falling back to the CPU
//
// This program queues a seed before anything touches the GPU. Then it draws
// on device 0 or, where the host has no GPU, on the CPU: the same values, from
// the same queued seed, with no seed given again. It is Example_fallBackToCPU,
// which runs to its end on a CPU-only host:
//
//	import (
//		"context"
//		"fmt"
//		"log"
//
//		"github.com/gpuinit/gpuinit/device"
//		_ "github.com/gpuinit/gpuinit/device/backends"
//		"github.com/gpuinit/gpuinit/rng"
//	)
//
//	ctx := context.Background()
//	rt, err := device.Open("") // auto: the first GPU backend that works; touches no driver
//	if err != nil {
//		log.Fatal(err) // a bad GPUINIT_* setting: fix it, never serve around it
//	}
//	defer rt.Shutdown(ctx)
//	if err := rt.UsePreflight(device.Preflight{}); err != nil { // the driver's init runs in a child first
//		log.Fatal(err)
//	}
//	gens := rng.New(rt)
//	if err := gens.ManualSeed(ctx, 0, 42); err != nil { // queued: no driver is loaded yet
//		log.Fatal(err)
//	}
//	values := make([]uint32, 4)
//	_, err = rt.DeviceCount(ctx) // the first touch: the child, the driver's init, the queued seed
//	switch {
//	case device.FallBackToCPU(err): // no GPU here: err says why, Stats and the health status too
//		err = gens.GenerateOnHost(ctx, 0, values) // what device 0 would draw
//	case err != nil: // a GPU broken or not ready yet: never served around on the CPU
//		log.Fatalf("unready (%s): %v", device.ClassOf(err), err)
//	default:
//		err = gens.Generate(ctx, 0, values)
//	}
//	fmt.Println(values, err)
//
// The draw on the CPU follows the backend's [Ordering]: cuRAND's for cuda and
// sim, rocRAND's for hip. [OrderingOf] says which a Runtime's backend uses.
package rng
