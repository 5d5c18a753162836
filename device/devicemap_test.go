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
