package device

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/visibility"
)

// MappedDevice is one device of a DeviceMap. It holds the runtime's ordinal
// for it and the names the vendor's tools use.
type MappedDevice struct {
	Ordinal int // the runtime's: what the server passes to the driver
	// Index is NVML's index (nvidia-smi's GPU number) for cuda, and
	// libhsakmt's node id for hip. It is -1 where unknown.
	Index    int
	UUID     string // matches nvidia-smi -L and rocm-smi: the name to use in CUDA_VISIBLE_DEVICES
	PCIBusID string
	Name     string
	// Selected is the visibility variable's entry that made the device
	// visible, such as "CUDA_VISIBLE_DEVICES entry 1: GPU-8f2". It is ""
	// when the variable is unset.
	Selected string
}

// DeviceMap is how a Runtime's ordinals map to the host's GPUs. It follows
// the visibility variables the Runtime read at Init.
type DeviceMap struct {
	Backend string
	// Order is CUDA_DEVICE_ORDER as CUDA applies it: FASTEST_FIRST (the
	// default) or PCI_BUS_ID. It is "" off CUDA.
	Order   string
	Devices []MappedDevice
	// Warning says when the runtime's order is not the vendor tool's (PCI
	// bus order) on a host with more than one GPU model. "GPU 0" then names
	// different cards to the server and to nvidia-smi.
	Warning string
}

// DeviceMap reports each device's runtime ordinal, the vendor tool's index,
// its PCI bus id and UUID, and the visibility entry that selected it. It
// parses the variables as the runtimes do. A repeated entry empties CUDA's
// list; an invalid one ends it.
//
// DeviceMap initializes first if needed, waiting no longer than ctx. It
// builds the map only when asked, so Init pays nothing for it. Reading the
// indices loads NVML on cuda.
// A nil ctx panics, naming DeviceMap.
func (r *Runtime) DeviceMap(ctx context.Context) (DeviceMap, error) {
	nilContext(ctx, "DeviceMap")
	infos, err := r.Devices(ctx)
	if err != nil {
		return DeviceMap{}, err
	}
	var vars map[string]string
	if p := r.visibility.Load(); p != nil {
		vars = *p
	}
	getenv := func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
	m := DeviceMap{Backend: r.Name()}
	var spec visibility.Spec
	switch r.Registration().Visibility {
	case driver.VisibilityCUDA:
		spec = visibility.LookupCUDA(getenv)
		m.Order = visibility.OrderFastestFirst
		if v, ok := vars[visibility.EnvOrder]; ok && v != "" {
			m.Order = v
		}
	case driver.VisibilityROCm:
		rocr, hip := visibility.LookupROCm(getenv)
		spec = rocr
		if hip.Set {
			spec = hip // HIP indexes what ROCr left: its entry names the ordinal
		}
	}
	indexer, hasIndex := driver.Capability[driver.PhysicalIndexer](r.Backend())
	selected := selectors(spec, infos)
	var entries []visibility.Entry
	for _, info := range infos {
		d := MappedDevice{Ordinal: info.Ordinal, Index: -1, UUID: info.UUID, PCIBusID: info.PCIBusID, Name: info.Name}
		if hasIndex {
			if i, err := indexer.PhysicalIndex(info.Ordinal); err == nil {
				d.Index = i
			}
		}
		if k := selected[info.Ordinal]; k >= 0 {
			d.Selected = fmt.Sprintf("%s entry %d: %s", spec.Var, k, strings.TrimSpace(spec.Selectors[k].Text))
		}
		m.Devices = append(m.Devices, d)
		entries = append(entries, visibility.Entry{Ordinal: info.Ordinal,
			Physical: visibility.Physical{UUID: info.UUID, PCIBusID: info.PCIBusID, Index: d.Index, Name: info.Name}})
	}
	if visibility.OrderDiffersFromPCI(entries) {
		m.Warning = fmt.Sprintf("%s numbers these GPUs of more than one model in another order than nvidia-smi and rocm-smi (PCI bus order): match them by UUID, or set CUDA_DEVICE_ORDER=PCI_BUS_ID", m.Backend)
	}
	return m, nil
}

// selectors returns, for each device by ordinal, the position of the entry
// of spec that selected it, or -1. An entry may name a UUID: a GPU's, a MIG
// device's, or a MIG instance by its parent and ids. It selects the devices
// it names, wherever they are in the enumeration. Under MIG, the runtime
// drops entries (one compute instance per GPU instance), so a position means
// nothing. The entries that name indices then select the devices no UUID
// entry selected, in order, as the runtime enumerates them.
func selectors(spec visibility.Spec, infos []Info) []int {
	out := make([]int, len(infos))
	for i := range out {
		out[i] = -1
	}
	if !spec.Set {
		return out
	}
	for k, sel := range spec.Selectors {
		for i, info := range infos {
			if out[i] < 0 && selects(sel, info) {
				out[i] = k
			}
		}
	}
	next := 0
	for k, sel := range spec.Selectors {
		if sel.Kind != visibility.Index {
			continue
		}
		for next < len(infos) && out[next] >= 0 {
			next++
		}
		if next == len(infos) {
			break
		}
		out[next] = k
	}
	return out
}

// selects reports whether a UUID entry names the device.
func selects(sel visibility.Selector, info Info) bool {
	prefix := func(uuid string) bool {
		return sel.UUID != "" && strings.HasPrefix(strings.ToLower(uuid), strings.ToLower(sel.UUID))
	}
	switch sel.Kind {
	case visibility.GPUUUID:
		if info.MIG != nil {
			return prefix(info.MIG.ParentUUID) // a MIG-enabled GPU named by its own UUID
		}
		return prefix(info.UUID)
	case visibility.MIGUUID:
		return info.MIG != nil && prefix(info.UUID)
	case visibility.MIGInstance:
		return info.MIG != nil && prefix(info.MIG.ParentUUID) &&
			info.MIG.GPUInstance == sel.GI && info.MIG.ComputeInstance == sel.CI
	}
	return false
}

// visibilityVariables are the environment variables that choose which GPUs
// a process sees, and how they are numbered or targeted.
var visibilityVariables = []string{
	"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
	"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "HSA_OVERRIDE_GFX_VERSION",
}

// readVisibility reads the visibility variables that are set, with their
// values. An empty value hides every device.
func readVisibility() map[string]string {
	seen := map[string]string{}
	for _, name := range visibilityVariables {
		if v, ok := os.LookupEnv(name); ok {
			seen[name] = v
		}
	}
	return seen
}
