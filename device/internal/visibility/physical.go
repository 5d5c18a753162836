package visibility

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Physical is one GPU of the host as NVML or the KFD topology describe it,
// before any visibility variable.
type Physical struct {
	// UUID as the runtime compares it: NVML's "GPU-8932f937-d72c-…" for
	// NVIDIA, AMDUUID(unique_id) ("GPU-" and 16 hex digits, or "GPU-XX")
	// for AMD.
	UUID string
	// PCIBusID is domain:bus:device.function in hex, in any case and domain
	// width: NVML's "00000000:07:00.0" and sysfs's "0000:07:00.0" compare
	// equal.
	PCIBusID string
	// Index is NVML's index (nvidia-smi's GPU number) for NVIDIA, the KFD
	// topology node id for AMD; ROCr numbers GPUs in ascending node id.
	Index int
	Name  string // the model, "NVIDIA A100-SXM4-80GB"
	// Speed is the caller's guess at CUDA's FASTEST_FIRST heuristic, larger
	// first; NVIDIA does not publish the heuristic (see Map).
	Speed int
	// MIGEnabled is MIG mode on: the GPU itself is then no CUDA device, only
	// its MIG devices are.
	MIGEnabled bool
	// MIG are the GPU's MIG devices (compute instances), in NVML's MIG device
	// index order.
	MIG []MIGDevice
}

// MIGDevice is one compute instance of a MIG-enabled GPU: what CUDA
// enumerates as one device (NVIDIA MIG User Guide: "CUDA applications treat
// a CI and its parent GI as a single CUDA device").
type MIGDevice struct {
	UUID    string // "MIG-c6d4f1ef-…" (R470 and later)
	GI      int    // the GPU instance id
	CI      int    // the compute instance id within the GI
	Profile string // "1g.10gb", "1c.3g.20gb"
}

// Entry is one device of a runtime's enumeration.
type Entry struct {
	Ordinal  int        // the runtime's device ordinal
	Physical Physical   // the GPU, or the MIG device's parent
	MIG      *MIGDevice // the compute instance, when the device is one
	Var      string     // the variable whose entry chose it; "" when none is set
	Why      string     // that entry as the runtime read it; "" when the variable is unset
}

// UUID returns the UUID the runtime reports for the device: the MIG device's
// for a compute instance, else the GPU's.
func (e Entry) UUID() string {
	if e.MIG != nil {
		return e.MIG.UUID
	}
	return e.Physical.UUID
}

// String reads `1 GPU-… (0000:07:00.0, index 0) by CUDA_VISIBLE_DEVICES "0"`.
func (e Entry) String() string {
	s := fmt.Sprintf("%d %s (%s, index %d)", e.Ordinal, e.UUID(), e.Physical.PCIBusID, e.Physical.Index)
	if e.Var != "" {
		s += fmt.Sprintf(" by %s %q", e.Var, e.Why)
	}
	return s
}

// pciKey is a PCI bus id's numbers, for ordering.
type pciKey struct {
	domain, bus, dev, fn uint64
	raw                  string // the lower-cased id where it does not parse
}

func parsePCI(id string) pciKey {
	id = strings.ToLower(strings.TrimSpace(id))
	bad := pciKey{domain: 1 << 63, raw: id}
	head, fn, ok := strings.Cut(id, ".")
	if !ok {
		return bad
	}
	parts := strings.Split(head, ":")
	if len(parts) == 2 {
		parts = append([]string{"0"}, parts...)
	}
	if len(parts) != 3 {
		return bad
	}
	var n [4]uint64
	for i, p := range append(parts, fn) {
		v, err := strconv.ParseUint(p, 16, 64)
		if err != nil {
			return bad
		}
		n[i] = v
	}
	return pciKey{domain: n[0], bus: n[1], dev: n[2], fn: n[3]}
}

func comparePCI(a, b string) int {
	x, y := parsePCI(a), parsePCI(b)
	return cmp.Or(cmp.Compare(x.domain, y.domain), cmp.Compare(x.bus, y.bus),
		cmp.Compare(x.dev, y.dev), cmp.Compare(x.fn, y.fn), cmp.Compare(x.raw, y.raw))
}

// OrderDiffersFromPCI reports whether entries, a runtime's enumeration, hold
// GPUs of more than one model in an order other than ascending PCI bus id,
// nvidia-smi's and NVML's order. That is when CUDA's default FASTEST_FIRST
// (or a reordering variable) makes "GPU 0" mean different cards to CUDA and
// to nvidia-smi, and the caller should say so (or suggest
// CUDA_DEVICE_ORDER=PCI_BUS_ID). MIG devices of one GPU share its bus id
// and never count as out of order among themselves.
func OrderDiffersFromPCI(entries []Entry) bool {
	models := map[string]bool{}
	for _, e := range entries {
		models[e.Physical.Name] = true
	}
	if len(models) < 2 {
		return false
	}
	return !slices.IsSortedFunc(entries, func(a, b Entry) int {
		return comparePCI(a.Physical.PCIBusID, b.Physical.PCIBusID)
	})
}

// checkDevices refuses a device list the runtimes could not present: two
// GPUs or two MIG devices with one UUID.
func checkDevices(devices []Physical) error {
	seen := map[string]bool{}
	for _, d := range devices {
		ids := []string{d.UUID}
		for _, m := range d.MIG {
			ids = append(ids, m.UUID)
		}
		for _, id := range ids {
			if id == "" || id == "GPU-XX" {
				continue // no UUID; AMD GPUs before gfx9 all read GPU-XX
			}
			if seen[id] {
				return fmt.Errorf("visibility: two devices have UUID %s", id)
			}
			seen[id] = true
		}
	}
	return nil
}
