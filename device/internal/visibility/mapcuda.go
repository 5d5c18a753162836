package visibility

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// CUDA_DEVICE_ORDER's values (CUDA Programming Guide, "CUDA Environment
// Variables"); "" is the default, FASTEST_FIRST.
const (
	OrderFastestFirst = "FASTEST_FIRST" // the fastest GPU first (see MIGRule.Map)
	OrderPCIBusID     = "PCI_BUS_ID"    // ascending PCI bus id, NVML's order
)

// ErrOrder is Map's answer to a CUDA_DEVICE_ORDER other than "",
// FASTEST_FIRST and PCI_BUS_ID: what CUDA does with one is not documented.
var ErrOrder = errors.New("CUDA_DEVICE_ORDER is neither FASTEST_FIRST nor PCI_BUS_ID")

// MIGRule is how a CUDA driver enumerates MIG devices, which changed at R570
// (NVIDIA MIG User Guide, "CUDA Device Enumeration"). MIG.md has the table.
type MIGRule int

const (
	// MIGOneDevice is CUDA 11/R450 through the drivers before R570: "a
	// single CUDA process can only enumerate a single MIG device", the first
	// one visible, and "CUDA will not enumerate non-MIG GPU if any compute
	// instance is enumerated on any other GPU".
	MIGOneDevice MIGRule = iota
	// MIGOnePerInstance is CUDA 12/R570 and later: one compute instance per
	// GPU instance ("if several are visible, CUDA selects the first
	// available"), across GPUs, non-MIG GPUs enumerated beside them, and "at
	// most 64 MIG instances across all GPUs".
	MIGOnePerInstance
)

// maxMIG is R570's limit on MIG devices in one process.
const maxMIG = 64

// MIGRuleFor is the rule of a driver branch (570 for 570.86.15); 0, for
// unknown, gives MIGOneDevice.
func MIGRuleFor(driverMajor int) MIGRule {
	if driverMajor >= 570 {
		return MIGOnePerInstance
	}
	return MIGOneDevice
}

// String returns the rule's name.
func (r MIGRule) String() string {
	if r == MIGOnePerInstance {
		return "one-per-gpu-instance"
	}
	return "one-device"
}

// Map is MIGOneDevice.Map: what a CUDA process sees, for drivers before
// R570. Use MIGRuleFor(driver).Map where the driver is known.
func Map(spec Spec, devices []Physical, order string) ([]Entry, error) {
	return MIGOneDevice.Map(spec, devices, order)
}

// Map returns, for each CUDA ordinal, the device it is, given a
// CUDA_VISIBLE_DEVICES Spec, the host's GPUs (in any order) and
// CUDA_DEVICE_ORDER.
//
// Order first numbers every GPU; indices in the variable count in that
// numbering, and the visible devices are then enumerated in the variable's
// order (CUDA guide: "enumerated in the order of the sequence"). PCI_BUS_ID
// "orders devices by PCI bus ID in ascending order", which is NVML's and
// nvidia-smi's order. FASTEST_FIRST, the default, "causes CUDA to guess which
// device is fastest using a simple heuristic, and make that device 0, leaving
// the order of the rest of the devices unspecified" (older guides; newer ones
// say "fastest to slowest order"). The heuristic is not published, so this is
// a model: descending Physical.Speed, equal speeds by PCI bus id. On a host
// of one model the model is PCI order; where speeds tie on a mixed host the
// real order among them is unspecified and may differ.
//
// Resolving entries (PyTorch's _transform_uuid_to_ordinals and the CUDA
// guide): the first entry that names nothing ends the list: an index past
// the last GPU, a GPU- or MIG- UUID prefix that matches no device or more
// than one ("GPU-8932f937" is valid "assuming no other GPU in the system
// shares this prefix"). Two entries naming one device empty the list. A
// MIG-enabled GPU named by its own UUID is no CUDA device and adds nothing
// (ollama/ollama#13800: a MIG slice's parent UUID gave "no CUDA-capable
// device"); named by index it is modelled the same way (unconfirmed). Whether
// a prefix of a MIG UUID, or of the parent UUID in the pre-R470 form, is
// accepted is unconfirmed; both are treated like GPU UUID prefixes. Then the
// MIG rule decides which MIG devices CUDA enumerates. The result is nil, with
// no error, when CUDA sees no device.
func (r MIGRule) Map(spec Spec, devices []Physical, order string) ([]Entry, error) {
	if spec.Set && spec.Runtime != CUDA {
		return nil, fmt.Errorf("visibility: Map reads CUDA's variables; %s as %s reads it needs MapROCm", spec.Var, spec.Runtime)
	}
	if err := checkDevices(devices); err != nil {
		return nil, err
	}
	ordered, err := cudaOrder(devices, order)
	if err != nil {
		return nil, err
	}
	var targets []target
	if !spec.Set {
		for g, d := range ordered {
			if !d.MIGEnabled {
				targets = append(targets, target{gpu: g, mig: -1})
			}
			for m := range d.MIG {
				targets = append(targets, target{gpu: g, mig: m})
			}
		}
	} else {
		chosen := map[[2]int]bool{}
		for _, sel := range spec.Selectors {
			t, ok := resolveCUDA(sel, ordered)
			if !ok {
				break
			}
			if chosen[[2]int{t.gpu, t.mig}] {
				return nil, nil // "Duplicates result in empty set"
			}
			chosen[[2]int{t.gpu, t.mig}] = true
			t.why = sel.Text
			targets = append(targets, t)
		}
	}
	return r.enumerate(ordered, targets, spec), nil
}

// target is one device a variable's entry names: a GPU, or a MIG device on it.
type target struct {
	gpu, mig int // indices into the ordered GPUs and their MIG devices; mig -1 for the GPU
	why      string
}

// enumerate applies the MIG rule to the named devices, in their order.
func (r MIGRule) enumerate(ordered []Physical, targets []target, spec Spec) []Entry {
	var out []Entry
	add := func(t target) {
		e := Entry{Ordinal: len(out), Physical: ordered[t.gpu], Why: t.why}
		if spec.Set {
			e.Var = spec.Var
		}
		if t.mig >= 0 {
			m := ordered[t.gpu].MIG[t.mig]
			e.MIG = &m
		}
		out = append(out, e)
	}
	if r == MIGOneDevice {
		for _, t := range targets {
			if t.mig >= 0 {
				add(t) // the first MIG device visible, alone
				return out
			}
		}
	}
	instances := map[[2]int]bool{} // GPU and GPU instance already enumerated
	for _, t := range targets {
		switch {
		case t.mig < 0 && ordered[t.gpu].MIGEnabled:
			// A MIG-enabled GPU is no CUDA device itself.
		case t.mig < 0:
			add(t)
		default:
			gi := [2]int{t.gpu, ordered[t.gpu].MIG[t.mig].GI}
			if instances[gi] || len(instances) == maxMIG {
				continue
			}
			instances[gi] = true
			add(t)
		}
	}
	return out
}

// cudaOrder numbers the GPUs as CUDA_DEVICE_ORDER does (see MIGRule.Map).
func cudaOrder(devices []Physical, order string) ([]Physical, error) {
	ordered := slices.Clone(devices)
	byPCI := func(a, b Physical) int {
		return cmp.Or(comparePCI(a.PCIBusID, b.PCIBusID), cmp.Compare(a.Index, b.Index))
	}
	switch order {
	case "", OrderFastestFirst:
		slices.SortStableFunc(ordered, func(a, b Physical) int {
			return cmp.Or(cmp.Compare(b.Speed, a.Speed), byPCI(a, b))
		})
	case OrderPCIBusID:
		slices.SortStableFunc(ordered, byPCI)
	default:
		return nil, fmt.Errorf("visibility: %q: %w", order, ErrOrder)
	}
	return ordered, nil
}

// resolveCUDA finds the device sel names among the ordered GPUs.
func resolveCUDA(sel Selector, ordered []Physical) (target, bool) {
	switch sel.Kind {
	case Index:
		if sel.Index < len(ordered) {
			return target{gpu: sel.Index, mig: -1}, true
		}
	case GPUUUID:
		if g, ok := uniqueGPU(sel.UUID, ordered); ok {
			return target{gpu: g, mig: -1}, true
		}
	case MIGUUID:
		var found []target
		for g, d := range ordered {
			for m, mig := range d.MIG {
				if strings.HasPrefix(mig.UUID, sel.UUID) {
					found = append(found, target{gpu: g, mig: m})
				}
			}
		}
		if len(found) == 1 {
			return found[0], true
		}
	case MIGInstance:
		if g, ok := uniqueGPU(sel.UUID, ordered); ok {
			for m, mig := range ordered[g].MIG {
				if mig.GI == sel.GI && mig.CI == sel.CI {
					return target{gpu: g, mig: m}, true
				}
			}
		}
	}
	return target{}, false
}

// uniqueGPU is the one GPU whose UUID starts with prefix, as PyTorch's
// uuid_to_orinal matches: none or two is no match.
func uniqueGPU(prefix string, ordered []Physical) (int, bool) {
	found := -1
	for g, d := range ordered {
		if strings.HasPrefix(d.UUID, prefix) {
			if found >= 0 {
				return -1, false // "Ambiguous candidate"
			}
			found = g
		}
	}
	return found, found >= 0
}
