package drahealth_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/dra/drahealth"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// A DRA driver's WatchHealthStatus is a Feed's: here over two simulated
// GPUs, the second of which falls off the bus (Xid 79).
func ExampleFeed_WatchHealthStatus() {
	gpus := sim.New()
	rt := device.New(gpus)
	defer rt.Shutdown(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	devices, err := rt.Devices(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	feed, err := drahealth.NewFeed(drahealth.FromRuntime(rt), devices, drahealth.Options{Pool: "node-a"})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The health watch starts right after init: wait until it watches.
	for s := rt.Stats(); len(s.Health) < 2 || s.Health[1].Verdict != healthwatch.VerdictHealthy; s = rt.Stats() {
		<-s.Changed()
	}

	reports := make(chan kubeletplugin.DeviceHealthReport)
	done := make(chan error)
	go func() { done <- feed.WatchHealthStatus(ctx, reports) }() // the helper runs it per kubelet stream
	show := func(r kubeletplugin.DeviceHealthReport) {
		for _, d := range r.Devices {
			fmt.Printf("%s/%s: %s, fallen off the bus: %t\n", d.PoolName, d.DeviceName, d.Health,
				strings.Contains(d.Message, "GPU_HAS_FALLEN_OFF_THE_BUS"))
		}
	}
	show(<-reports)
	gpus.InjectXid(1, 79)
	show(<-reports)
	cancel()
	fmt.Println("returned:", <-done)
	// Output:
	// node-a/gpu-5e1d0c0a-9a7f-4b6e-8d2c-000000000000: Healthy, fallen off the bus: false
	// node-a/gpu-5e1d0c0a-9a7f-4b6e-8d2c-000000000001: Healthy, fallen off the bus: false
	// node-a/gpu-5e1d0c0a-9a7f-4b6e-8d2c-000000000001: Unhealthy, fallen off the bus: true
	// returned: <nil>
}

// A driver taints its devices by their verdicts when it publishes its
// ResourceSlices: a lost GPU evicts its pods, a degraded one takes no new
// ones, an unknown one only says so.
func ExampleTaintFor() {
	for _, v := range []healthwatch.Verdict{healthwatch.VerdictHealthy, healthwatch.VerdictDegraded, healthwatch.VerdictUnhealthy, healthwatch.VerdictUnknown} {
		t, ok := drahealth.TaintFor(drahealth.State{Verdict: v})
		fmt.Printf("%s: %t %s=%s:%s\n", v, ok, t.Key, t.Value, t.Effect)
	}
	// Output:
	// healthy: false =:
	// degraded: true gpuinit.io/health=degraded:NoSchedule
	// unhealthy: true gpuinit.io/health=unhealthy:NoExecute
	// unknown: true gpuinit.io/health=unknown:None
}
