package device_test

import (
	"context"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInventoryListsBothVendorsOnce: a cuda and a hip Runtime side by side
// give one inventory; a device both see (the same PCI bus id) is listed
// once, under the first; a Runtime without a usable GPU is skipped with its
// reason.
func TestInventoryListsBothVendorsOnce(t *testing.T) {
	var g device.Registry
	registerGPU(&g, "cuda", 10)                      // sim's devices 0000:18:00.0, 0000:19:00.0
	registerGPU(&g, "hip", 20, sim.WithDevices(3))   // 18, 19 again, and 1a
	registerGPU(&g, "other", 30, sim.WithDevices(0)) // no device
	ctx := context.Background()
	devices, skipped, err := device.Inventory(ctx, openIn(t, &g, "cuda"), openIn(t, &g, "hip"), openIn(t, &g, "other"))
	require.NoError(t, err)
	var got []string
	for _, d := range devices {
		got = append(got, d.Backend+" "+d.PCIBusID)
	}
	assert.Equal(t, []string{"cuda 0000:18:00.0", "cuda 0000:19:00.0", "hip 0000:1a:00.0"}, got)
	require.Len(t, skipped, 1)
	assert.Equal(t, "other", skipped[0].Backend)
	assert.ErrorIs(t, skipped[0].Err, device.ErrNoDevice)
}

// TestAutoSaysTheOtherVendorIsPresent: on a host that shows both vendors'
// devices, auto chooses one and says in PassedOver that the other was not
// tried, and why.
func TestAutoSaysTheOtherVendorIsPresent(t *testing.T) {
	auto := autoBesideHip(t)
	assert.Equal(t, "cuda", auto.Name())
	passed := auto.Stats().PassedOver
	require.Len(t, passed, 1)
	assert.Equal(t, "hip", passed[0].Backend)
	assert.ErrorIs(t, passed[0].Err, driver.ErrOtherVendor)
	assert.ErrorContains(t, passed[0].Err, "the host shows its devices too (/dev/kfd)")
}

// autoBesideHip is auto's Runtime, initialized, on a host that shows hip's
// devices beside cuda's: it chooses cuda, and passes hip over untried.
func autoBesideHip(t *testing.T) *device.Runtime {
	t.Helper()
	var g device.Registry
	registerGPU(&g, "cuda", 10)
	g.Register(driver.Registration{Name: "hip", GPU: true, AutoRank: 20,
		Open:    func() (driver.Backend, error) { return fakeGPU{sim.New(), "hip"}, nil },
		Present: func() (bool, string) { return true, "/dev/kfd" }})
	auto := openIn(t, &g, "auto")
	require.NoError(t, auto.Init(context.Background()))
	return auto
}

// migHost is a GPU backend whose two devices are MIG instances of one GPU,
// as CUDA from R570 enumerates them: one PCI bus id (their GPU's), two UUIDs.
type migHost struct{ fakeGPU }

func (m migHost) Device(ordinal int) (driver.Info, error) {
	info, err := m.fakeGPU.Device(ordinal)
	info.UUID = []string{"MIG-1111", "MIG-2222"}[ordinal]
	info.PCIBusID = "0000:3b:00.0"
	info.MIG = &driver.MIG{ParentUUID: "GPU-aaaa", ParentPCIBusID: "0000:3b:00.0", GPUInstance: 1 + ordinal, Profile: "1g.10gb"}
	return info, err
}

// TestInventoryKeepsMIGInstancesApartByUUID: two MIG instances on one bus id
// are two devices; the same instance seen by a second Runtime is listed once.
func TestInventoryKeepsMIGInstancesApartByUUID(t *testing.T) {
	var g device.Registry
	for _, name := range []string{"cuda", "cuda-again"} {
		g.Register(driver.Registration{Name: name, GPU: true,
			Open: func() (driver.Backend, error) { return migHost{fakeGPU{sim.New(), name}}, nil }})
	}
	devices, skipped, err := device.Inventory(context.Background(), openIn(t, &g, "cuda"), openIn(t, &g, "cuda-again"))
	require.NoError(t, err)
	assert.Empty(t, skipped)
	var got []string
	for _, d := range devices {
		got = append(got, d.Backend+" "+d.UUID+" "+d.PCIBusID)
	}
	assert.Equal(t, []string{"cuda MIG-1111 0000:3b:00.0", "cuda MIG-2222 0000:3b:00.0"}, got)
}
