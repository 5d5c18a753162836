package drahealth_test

import (
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/dra/drahealth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestByUUIDNamesDevicesAsDNSLabels: whole GPUs and MIG slices by their own
// UUIDs, in lower case; a device without a UUID by its bus id; none
// without either.
func TestByUUIDNamesDevicesAsDNSLabels(t *testing.T) {
	for _, tc := range []struct {
		name string
		info device.Info
		want string
		err  string
	}{
		{"an NVIDIA GPU by its UUID, in lower case", device.Info{UUID: "GPU-5E1D0C0A-9a7f-4b6e-8d2c-000000000001"},
			"gpu-5e1d0c0a-9a7f-4b6e-8d2c-000000000001", ""},
		{"a MIG slice by its own UUID, not its parent's", device.Info{UUID: "MIG-4a0b6a8e-1f2c-5d3e-9b4a-7c6d5e4f3a2b",
			MIG: &driver.MIG{ParentUUID: "GPU-5e1d0c0a-9a7f-4b6e-8d2c-000000000001", Profile: "1g.10gb"}},
			"mig-4a0b6a8e-1f2c-5d3e-9b4a-7c6d5e4f3a2b", ""},
		{"an old-style MIG UUID, its slashes as dashes", device.Info{UUID: "MIG-GPU-5e1d0c0a-9a7f-4b6e-8d2c-000000000001/1/0"},
			"mig-gpu-5e1d0c0a-9a7f-4b6e-8d2c-000000000001-1-0", ""},
		{"an AMD GPU by rocm-smi's UUID", device.Info{UUID: "GPU-4b3d2c1a0f9e8d7c"}, "gpu-4b3d2c1a0f9e8d7c", ""},
		{"no UUID: the PCI bus id", device.Info{PCIBusID: "0000:18:00.0"}, "pci-0000-18-00-0", ""},
		{"neither: an error", device.Info{Ordinal: 3}, "", "device 3 has neither a UUID nor a PCI bus id"},
		{"too long for a DNS label: an error", device.Info{UUID: "GPU-" + strings.Repeat("f", 70)}, "", "does not make a DNS label"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := drahealth.ByUUID("node-a")(tc.info)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, drahealth.ID{Pool: "node-a", Device: tc.want}, id)
		})
	}
}

// TestNewFeedRefusesNamesKubernetesCannotUse: no pool, a name that is not a
// DNS label, and two devices of one name fail, naming the devices.
func TestNewFeedRefusesNamesKubernetesCannotUse(t *testing.T) {
	two := []device.Info{{Ordinal: 0, UUID: "GPU-a"}, {Ordinal: 1, UUID: "GPU-b"}}
	for _, tc := range []struct {
		name string
		opts drahealth.Options
		err  string
	}{
		{"no pool", drahealth.Options{}, "device 0 (GPU-a) has no pool name"},
		{"not a DNS label", drahealth.Options{Name: func(d device.Info) (drahealth.ID, error) {
			return drahealth.ID{Pool: "p", Device: d.UUID}, nil
		}}, `device 0's name "GPU-a" is not a DNS label`},
		{"one name twice", drahealth.Options{Name: func(device.Info) (drahealth.ID, error) {
			return drahealth.ID{Pool: "p", Device: "gpu"}, nil
		}}, "devices 0 and 1 are both named p/gpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := drahealth.NewFeed(newFakeSource(), two, tc.opts)
			assert.ErrorContains(t, err, tc.err)
		})
	}
}
