package sim_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/sim"
)

// A simulated backend stands in for a GPU wherever there is none: behind a
// device.Runtime it initializes and describes its devices as a CUDA driver
// does.
func ExampleNew() {
	rt := device.New(sim.New(sim.WithDevices(3)))
	defer rt.Shutdown(context.Background())
	devices, err := rt.Devices(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range devices {
		fmt.Printf("%d: %s %s %d GiB, compute %d.%d\n",
			d.Ordinal, d.Name, d.Arch, d.TotalMemory>>30, d.ComputeMajor, d.ComputeMinor)
	}
	v, _ := rt.DriverVersion()
	fmt.Println("driver:", v == sim.DriverVersion)
	// Output:
	// 0: gpuinit simulated H100 sm_90 80 GiB, compute 9.0
	// 1: gpuinit simulated H100 sm_90 80 GiB, compute 9.0
	// 2: gpuinit simulated H100 sm_90 80 GiB, compute 9.0
	// driver: true
}

// WithFailure makes Init fail as a real driver fails, with CUDA's code, name
// and hint, so that what a server does with the failure can be tested.
func ExampleWithFailure() {
	for _, f := range []sim.Failure{sim.NoDevice, sim.NotReady, sim.DriverMismatch} {
		rt := device.New(sim.New(sim.WithFailure(f)))
		err := rt.Init(context.Background())
		var de *device.DriverError
		if errors.As(err, &de) {
			fmt.Printf("%s: %s (%d), class %s, no usable GPU: %t\n",
				f, de.Name, de.Code, device.ClassOf(err), (device.ClassOf(err) != device.ClassNone))
		}
	}
	// Output:
	// no-device: CUDA_ERROR_NO_DEVICE (100), class no-gpu, no usable GPU: true
	// not-ready: CUDA_ERROR_SYSTEM_NOT_READY (802), class not-yet, no usable GPU: true
	// driver-mismatch: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803), class needs-operator, no usable GPU: true
}

// WithInitDelay makes Init take time, as a cold cuInit does; Init honours
// its context.
func ExampleWithInitDelay() {
	b := sim.New(sim.WithInitDelay(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	fmt.Println(errors.Is(b.Init(ctx), context.DeadlineExceeded))
	// Output:
	// true
}

// LoseDevice makes a device fail as after a sticky error. The server's next
// call on it fails with the CUDA code; reporting that error loses the device
// for the rest of the process, and the other device serves on.
func ExampleBackend_LoseDevice() {
	b := sim.New()
	rt := device.New(b)
	defer rt.Shutdown(context.Background())
	ctx := context.Background()
	if err := rt.Init(ctx); err != nil {
		fmt.Println(err)
		return
	}

	b.LoseDevice(1, 719) // CUDA_ERROR_LAUNCH_FAILED
	err := rt.Do(ctx, 1, func() error { return nil })
	var de *device.DriverError
	if errors.As(err, &de) {
		fmt.Printf("%s: %s (%d)\n", de.Op, de.Name, de.Code)
	}
	fmt.Println("lost:", errors.Is(rt.ReportError(1, err), device.ErrDeviceLost))
	fmt.Printf("device 0: %v; lost: %d\n", rt.CheckDevice(0), len(rt.Stats().Lost))
	// Output:
	// cuCtxSetCurrent: CUDA_ERROR_LAUNCH_FAILED (719)
	// lost: true
	// device 0: <nil>; lost: 1
}

// InjectXid has the simulated driver raise an Xid, which the Runtime's health
// watch takes as NVIDIA's: Xid 13 (an application's error) is counted, Xid 79
// (fallen off the bus) loses the device.
func ExampleBackend_InjectXid() {
	b := sim.New()
	rt := device.New(b)
	defer rt.Shutdown(context.Background())
	if err := rt.Init(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	// The watch starts right after init, and applies each event on its own
	// goroutine: an Xid raised before it watches is not seen, as on a real GPU.
	waitFor := func(cond func(d device.DeviceHealth) bool) {
		for h := rt.Stats().Health; len(h) < 2 || !cond(h[1]); h = rt.Stats().Health {
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(func(d device.DeviceHealth) bool { return d.Watched })

	b.InjectXid(1, 13)
	b.InjectXid(1, 79)
	waitFor(func(d device.DeviceHealth) bool { return d.Counted["xid 79"] == 1 })
	fmt.Println(rt.Stats().Health[1].Counted)
	for _, l := range rt.Stats().Lost {
		fmt.Println(l.Ordinal, l.Source, l.Err.Name)
	}
	// Output:
	// map[xid 13:1 xid 79:1]
	// 1 xid ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS
}
