package device_test

import (
	"context"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
)

// TestANilContextPanicsNamingTheMethod is the one rule for nil contexts, for
// every method of a Runtime that takes one, before and after init.
func TestANilContextPanicsNamingTheMethod(t *testing.T) {
	var nilCtx context.Context
	calls := map[string]func(r *device.Runtime){
		"Init":          func(r *device.Runtime) { _ = r.Init(nilCtx) },
		"Start":         func(r *device.Runtime) { _ = r.Start(nilCtx) },
		"LazyCall":      func(r *device.Runtime) { _ = r.LazyCall(nilCtx, func(context.Context) error { return nil }) },
		"LazyCallDepth": func(r *device.Runtime) { _ = r.LazyCallDepth(nilCtx, 0, func(context.Context) error { return nil }) },
		"DeviceCount":   func(r *device.Runtime) { _, _ = r.DeviceCount(nilCtx) },
		"Device":        func(r *device.Runtime) { _, _ = r.Device(nilCtx, 0) },
		"Devices":       func(r *device.Runtime) { _, _ = r.Devices(nilCtx) },

		"Memory":       func(r *device.Runtime) { _, _ = r.Memory(nilCtx, 0) },
		"Do":           func(r *device.Runtime) { _ = r.Do(nilCtx, 0, func() error { return nil }) },
		"NewGenerator": func(r *device.Runtime) { _, _ = r.NewGenerator(nilCtx, 0) },
		"Canary":       func(r *device.Runtime) { _ = r.Canary(nilCtx, 0) },
		"DeviceMap":    func(r *device.Runtime) { _, _ = r.DeviceMap(nilCtx) },
		"Inventory":    func(r *device.Runtime) { _, _, _ = device.Inventory(nilCtx, r) },
	}
	for _, initialized := range []bool{false, true} {
		for method, call := range calls {
			t.Run(map[bool]string{false: "before init/", true: "after init/"}[initialized]+method, func(t *testing.T) {
				r := device.New(sim.New())
				defer r.Shutdown(context.Background())
				if initialized {
					_ = r.Init(context.Background())
				}
				assert.PanicsWithValue(t, "device: "+method+" called with a nil Context", func() { call(r) })
			})
		}
	}
}
