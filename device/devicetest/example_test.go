package devicetest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/rng/philox"
)

// TestBackend goes in a backend's own tests: one call checks the whole
// contract, as subtests, on whatever machine the tests run on.
func ExampleTestBackend() {
	_ = func(t *testing.T) { // func TestContract(t *testing.T) in the backend's package
		devicetest.TestBackend(t, sim.New(), devicetest.GeneratorsDraw(philox.FillCURAND))
	}
}

// Check runs the same checks outside a test, for a tool that vets a backend
// before it serves with it. A backend that fails Init as the contract says,
// here with no device, keeps the contract too.
func ExampleCheck() {
	fmt.Println(devicetest.Check(sim.New(), devicetest.GeneratorsDraw(philox.FillCURAND)))
	fmt.Println(devicetest.Check(sim.New(sim.WithFailure(sim.NoDevice))))
	// Output:
	// <nil>
	// <nil>
}

// Counting proves what touched the driver: a Runtime calls nothing before its
// first use, and initializes once however often it is used.
func ExampleCounting() {
	c := &devicetest.Counting{Backend: sim.New()}
	rt := device.New(c)
	defer rt.Shutdown(context.Background())
	fmt.Println("before first use:", c.Calls().Total())

	ctx := context.Background()
	var first devicetest.Calls
	for i := range 3 {
		if _, err := rt.DeviceCount(ctx); err != nil {
			fmt.Println(err)
			return
		}
		if i == 0 {
			first = c.Calls()
		}
	}
	fmt.Println("Init calls:", c.Calls().Init)
	fmt.Println("calls after the first use:", c.Calls().Total()-first.Total())
	// Output:
	// before first use: 0
	// Init calls: 1
	// calls after the first use: 0
}
