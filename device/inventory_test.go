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

func TestBadOrdinalsAreRefusedWithTheRange(t *testing.T) {
	ctx := context.Background()
	r := device.New(sim.New(sim.WithDevices(2)))
	assert.ErrorContains(t, r.CheckDevice(0), "not initialized", "before init the range is unknown")
	for ordinal, want := range map[int]string{-1: "ordinals start at 0", 2: "valid ordinals are 0..1", 99: "valid ordinals are 0..1"} {
		_, err := r.Device(ctx, ordinal)
		assert.ErrorIs(t, err, device.ErrInvalidDevice)
		assert.ErrorContains(t, err, want)
	}
}

func TestDevicesReturnsACopy(t *testing.T) {
	ctx := context.Background()
	r := device.New(sim.New())
	devices, err := r.Devices(ctx)
	require.NoError(t, err)
	devices[0].Name = "changed"
	d0, err := r.Device(ctx, 0)
	require.NoError(t, err)
	assert.NotEqual(t, "changed", d0.Name)
}

// mixedHost is a GPU backend whose two devices are different models, the
// faster (ordinal 0) on the higher PCI bus: CUDA's FASTEST_FIRST order.
type mixedHost struct{ fakeGPU }

func (m mixedHost) Device(ordinal int) (driver.Info, error) {
	info, err := m.fakeGPU.Device(ordinal)
	info.Name = []string{"NVIDIA H200", "NVIDIA L4"}[ordinal]
	info.PCIBusID = []string{"0000:c1:00.0", "0000:18:00.0"}[ordinal]
	return info, err
}

func TestDeviceMapSaysWhichEntrySelectedEachDeviceAndWarnsOfTheOrder(t *testing.T) {
	t.Setenv("CUDA_VISIBLE_DEVICES", " 1, 0,junk,2")
	var g device.Registry
	g.Register(driver.Registration{Name: "cuda", GPU: true, AutoRank: 10, Visibility: driver.VisibilityCUDA,
		Open: func() (driver.Backend, error) { return mixedHost{fakeGPU{sim.New(), "cuda"}}, nil }})
	r := openIn(t, &g, "cuda")
	m, err := r.DeviceMap(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "FASTEST_FIRST", m.Order)
	require.Len(t, m.Devices, 2)
	assert.Equal(t, "CUDA_VISIBLE_DEVICES entry 0: 1", m.Devices[0].Selected)
	assert.Equal(t, "CUDA_VISIBLE_DEVICES entry 1: 0", m.Devices[1].Selected)
	assert.Equal(t, -1, m.Devices[0].Index, "sim has no vendor index")
	assert.Contains(t, m.Warning, "CUDA_DEVICE_ORDER=PCI_BUS_ID")

	t.Setenv("CUDA_VISIBLE_DEVICES", "")
	var h device.Registry
	registerGPU(&h, "cuda", 10)
	m, err = openIn(t, &h, "cuda").DeviceMap(context.Background())
	require.NoError(t, err)
	assert.Empty(t, m.Warning, "one model, in bus order")
}

// TestDeviceMapReadsTheVariablesTheRegistrationNames: the rules come from the
// registration, not the backend's name.
func TestDeviceMapReadsTheVariablesTheRegistrationNames(t *testing.T) {
	t.Setenv("CUDA_VISIBLE_DEVICES", "1,0")
	t.Setenv("ROCR_VISIBLE_DEVICES", "1,0")
	t.Setenv("HIP_VISIBLE_DEVICES", "0,1")
	for _, tc := range []struct {
		visibility driver.Visibility
		selected   string
		order      string
	}{
		{driver.VisibilityROCm, "HIP_VISIBLE_DEVICES entry 0: 0", ""},
		{driver.VisibilityCUDA, "CUDA_VISIBLE_DEVICES entry 0: 1", "FASTEST_FIRST"},
		{driver.VisibilityNone, "", ""},
	} {
		var g device.Registry
		g.Register(driver.Registration{Name: "amdgpu-test", GPU: true, Visibility: tc.visibility,
			Open: func() (driver.Backend, error) { return fakeGPU{sim.New(), "amdgpu-test"}, nil }})
		m, err := openIn(t, &g, "amdgpu-test").DeviceMap(context.Background())
		require.NoError(t, err)
		assert.Equal(t, tc.order, m.Order, "visibility %d", tc.visibility)
		require.NotEmpty(t, m.Devices)
		assert.Equal(t, tc.selected, m.Devices[0].Selected, "visibility %d", tc.visibility)
	}
}

// migSlices is a GPU backend whose two devices are MIG compute instances of
// one GPU, in two GPU instances: what R570 enumerates for
// CUDA_VISIBLE_DEVICES=MIG-a,MIG-b,MIG-c when a and b share GPU instance 1
// (one compute instance per GPU instance).
type migSlices struct{ fakeGPU }

func (m migSlices) Device(ordinal int) (driver.Info, error) {
	info, err := m.fakeGPU.Device(ordinal)
	info.UUID = []string{"MIG-aaaaaaaa-0000-0000-0000-000000000000", "MIG-cccccccc-0000-0000-0000-000000000000"}[ordinal]
	info.MIG = &driver.MIG{ParentUUID: "GPU-11111111-0000-0000-0000-000000000000", GPUInstance: []int{1, 2}[ordinal], ComputeInstance: 0}
	return info, err
}

func TestDeviceMapMatchesEntriesByWhatTheyName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		visible string
		want    []string
	}{
		{"MIG UUIDs, one dropped by the one-per-GPU-instance rule", "MIG-aaaaaaaa,MIG-bbbbbbbb,MIG-cccccccc",
			[]string{"CUDA_VISIBLE_DEVICES entry 0: MIG-aaaaaaaa", "CUDA_VISIBLE_DEVICES entry 2: MIG-cccccccc"}},
		{"MIG UUIDs in another order", "MIG-cccccccc,MIG-aaaaaaaa",
			[]string{"CUDA_VISIBLE_DEVICES entry 1: MIG-aaaaaaaa", "CUDA_VISIBLE_DEVICES entry 0: MIG-cccccccc"}},
		{"the pre-R470 form, by parent and instance ids", "MIG-GPU-11111111-0000-0000-0000-000000000000/2/0",
			[]string{"", "CUDA_VISIBLE_DEVICES entry 0: MIG-GPU-11111111-0000-0000-0000-000000000000/2/0"}},
		{"a GPU UUID naming the MIG devices' parent selects them all", "GPU-11111111",
			[]string{"CUDA_VISIBLE_DEVICES entry 0: GPU-11111111", "CUDA_VISIBLE_DEVICES entry 0: GPU-11111111"}},
		{"a GPU UUID naming another GPU selects none of them", "GPU-22222222", []string{"", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CUDA_VISIBLE_DEVICES", tc.visible)
			var g device.Registry
			g.Register(driver.Registration{Name: "cuda", GPU: true, Visibility: driver.VisibilityCUDA,
				Open: func() (driver.Backend, error) { return migSlices{fakeGPU{sim.New(), "cuda"}}, nil }})
			m, err := openIn(t, &g, "cuda").DeviceMap(context.Background())
			require.NoError(t, err)
			require.Len(t, m.Devices, 2)
			for i, want := range tc.want {
				assert.Equal(t, want, m.Devices[i].Selected, "device %d", i)
			}
		})
	}
}
