package rng_test

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/gpuinit/gpuinit/rng"
)

// Seeding before the GPU is initialized is queued, as torch.cuda.manual_seed
// is, and applied right after the driver's init; the first draw initializes.
// The offset advances by the values drawn, rounded up to a multiple of 4.
func ExampleGenerators() {
	rt := device.New(sim.New())
	defer rt.Shutdown(context.Background())
	gens := rng.New(rt)
	defer gens.Close()
	ctx := context.Background()

	if err := gens.ManualSeedAll(ctx, 42); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("initialized:", (rt.Stats().State == lazy.Ready))

	dst := make([]uint32, 6)
	if err := gens.Generate(ctx, 0, dst); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("initialized:", (rt.Stats().State == lazy.Ready))
	fmt.Printf("%08x\n", dst)
	st, err := gens.State(ctx, 0)
	fmt.Printf("%+v %v\n", st, err)
	// Output:
	// initialized: false
	// initialized: true
	// [9ceaf053 77f5493b 12bf50ad 5742b3d7 02933769 2051e913]
	// {Seed:42 Offset:8} <nil>
}

// A state saved with State and restored with SetState draws the same numbers
// again, like torch.cuda.get_rng_state and set_rng_state.
func ExampleGenerators_SetState() {
	rt := device.New(sim.New())
	defer rt.Shutdown(context.Background())
	gens := rng.New(rt)
	defer gens.Close()
	ctx := context.Background()

	saved, err := gens.State(ctx, 1) // initializes: device 1 has the default seed
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("default seed:", saved == rng.State{Seed: rng.DefaultSeed})
	first := make([]uint32, 4)
	again := make([]uint32, 4)
	_ = gens.Generate(ctx, 1, first)
	_ = gens.SetState(ctx, 1, saved)
	_ = gens.Generate(ctx, 1, again)
	fmt.Println("same:", slices.Equal(first, again))

	// A state the device could not be in is refused at once.
	err = gens.SetState(ctx, 1, rng.State{Seed: 42, Offset: 3})
	fmt.Println(errors.Is(err, rng.ErrBadState))
	// Output:
	// default seed: true
	// same: true
	// true
}

// GenerateOnHost draws on the CPU what the device would draw, and advances the
// same state: a server without a device generator serves the same stream.
func ExampleGenerators_GenerateOnHost() {
	rt := device.New(sim.New())
	defer rt.Shutdown(context.Background())
	gens := rng.New(rt)
	defer gens.Close()
	ctx := context.Background()
	_ = gens.ManualSeed(ctx, 0, 7)

	onDevice := make([]uint32, 8)
	onHost := make([]uint32, 8)
	_ = gens.Generate(ctx, 0, onDevice[:4])
	_ = gens.GenerateOnHost(ctx, 0, onDevice[4:]) // continues the device's stream

	_ = gens.ManualSeed(ctx, 0, 7)
	_ = gens.GenerateOnHost(ctx, 0, onHost)
	fmt.Println("same:", slices.Equal(onDevice, onHost))
	// Output:
	// same: true
}

// A Host needs no device.Runtime: it draws the stream a device generator of
// its ordering draws, where there is no GPU at all.
func ExampleHost() {
	h := rng.NewHost(rng.CURAND, 42)
	dst := make([]uint32, 6)
	from, err := h.Generate(dst)
	fmt.Printf("%+v %v\n", from, err)
	fmt.Printf("%08x\n", dst)
	fmt.Printf("%+v\n", h.State())
	// Output:
	// {Seed:42 Offset:0} <nil>
	// [9ceaf053 77f5493b 12bf50ad 5742b3d7 02933769 2051e913]
	// {Seed:42 Offset:8}
}

// A State's binary form is the 16 bytes of torch.cuda.get_rng_state; the 8
// bytes of a seed alone are accepted too.
func ExampleState_MarshalBinary() {
	b, err := rng.State{Seed: 42, Offset: 8}.MarshalBinary()
	fmt.Printf("% x %v\n", b, err)

	var s rng.State
	fmt.Println(s.UnmarshalBinary(b[:8]), s)
	err = s.UnmarshalBinary(b[:5])
	fmt.Println(errors.Is(err, rng.ErrBadState), s)
	// Output:
	// 2a 00 00 00 00 00 00 00 08 00 00 00 00 00 00 00 <nil>
	// <nil> {42 0}
	// true {42 0}
}

// A backend's generators lay Philox's stream out as cuRAND or rocRAND does;
// Fill draws either on the CPU.
func ExampleOrderingOf() {
	rt, err := device.Open("sim") // as registered: sim's generators draw as cuRAND's
	if err != nil {
		fmt.Println(err)
		return
	}
	o := rng.OrderingOf(rt)
	fmt.Println(o)
	dst := make([]uint32, 8)
	o.Fill(dst, 42, 0)
	fmt.Printf("%08x\n", dst)
	rng.ROCRAND.Fill(dst, 42, 0)
	fmt.Printf("%v: %08x\n", rng.ROCRAND, dst)
	// Output:
	// curand
	// [9ceaf053 77f5493b 12bf50ad 5742b3d7 02933769 2051e913 3b68b038 b62c409c]
	// rocrand: [9ceaf053 77f5493b 12bf50ad 5742b3d7 fcdb2127 53ba6cfd 838f5a6e 744e06fb]
}
