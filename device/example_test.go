package device_test

import (
	"context"
	"fmt"

	"github.com/gpuinit/gpuinit/device"
	_ "github.com/gpuinit/gpuinit/device/backends"
)

// Open is cheap and touches no driver; the first query initializes.
func ExampleOpen() {
	rt, err := device.Open("sim") // "" reads GPUINIT_BACKEND, else picks cuda or hip
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("initialized:", rt.IsInitialized())
	n, err := rt.DeviceCount(context.Background())
	if err != nil {
		fmt.Println(err) // e.g. cuda: cuInit failed: CUDA_ERROR_NO_DEVICE (100): ...
		return
	}
	fmt.Println("devices:", n, "initialized:", rt.IsInitialized())
	// Output:
	// initialized: false
	// devices: 2 initialized: true
}
