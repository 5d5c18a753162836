package drahealth

import (
	"fmt"
	"strings"

	"github.com/gpuinit/gpuinit/device"
)

// ID is a device's identity in a DRA driver's ResourceSlices and health
// reports: its pool and its name in the pool.
type ID struct {
	Pool, Device string
}

// String is "pool/device".
func (id ID) String() string { return id.Pool + "/" + id.Device }

// Namer names one of gpuinit's devices (its ordinal, UUID, PCI bus id, and
// MIG parent for a MIG slice) as the driver publishes it. The name must be a
// DNS label and stay the same across restarts of the driver: an ordinal
// does not (CUDA_VISIBLE_DEVICES renumbers), a UUID does.
type Namer func(device.Info) (ID, error)

// maxLabel is the length limit of a DNS label, which a ResourceSlice's
// device names are.
const maxLabel = 63

// ByUUID is the default Namer: every device in pool (the node's name, for a
// driver that publishes its node's devices), named by its UUID in lower case
// with every character outside [a-z0-9-] made '-' ("GPU-5e1d…" is
// "gpu-5e1d…"). A MIG slice is a device of its own, named by its own
// "MIG-…" UUID. A device without a UUID is named by its PCI bus id
// ("pci-0000-18-00-0"); one with neither fails, as does a name that is not
// a DNS label.
func ByUUID(pool string) Namer {
	return func(d device.Info) (ID, error) {
		raw := d.UUID
		if raw == "" && d.PCIBusID != "" {
			raw = "pci-" + d.PCIBusID
		}
		if raw == "" {
			return ID{}, fmt.Errorf("device %d has neither a UUID nor a PCI bus id to name it by", d.Ordinal)
		}
		name, err := label(raw)
		if err != nil {
			return ID{}, fmt.Errorf("device %d: %w", d.Ordinal, err)
		}
		return ID{Pool: pool, Device: name}, nil
	}
}

// label makes s a DNS label: lower case, every other character '-', no '-'
// at either end, at most 63 characters.
func label(s string) (string, error) {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	name := strings.Trim(string(b), "-")
	if name == "" || len(name) > maxLabel {
		return "", fmt.Errorf("%q does not make a DNS label (1 to %d of [a-z0-9-]): name the devices with a Namer of your own", s, maxLabel)
	}
	return name, nil
}

// nameAll names devices, checking that every name is a DNS label and unique
// in its pool and that the pool is named.
func nameAll(devices []device.Info, name Namer) ([]ID, error) {
	ids := make([]ID, len(devices))
	seen := make(map[ID]int, len(devices))
	for i, d := range devices {
		id, err := name(d)
		if err != nil {
			return nil, err
		}
		if id.Pool == "" {
			return nil, fmt.Errorf("device %d (%s) has no pool name: give ByUUID the node's name", d.Ordinal, d.UUID)
		}
		if l, err := label(id.Device); err != nil || l != id.Device {
			return nil, fmt.Errorf("device %d's name %q is not a DNS label (1 to %d of [a-z0-9-], no '-' at either end)", d.Ordinal, id.Device, maxLabel)
		}
		if j, dup := seen[id]; dup {
			return nil, fmt.Errorf("devices %d and %d are both named %s", devices[j].Ordinal, d.Ordinal, id)
		}
		seen[id] = i
		ids[i] = id
	}
	return ids, nil
}
