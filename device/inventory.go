package device

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/visibility"
)

// InventoryDevice is one GPU of a process's inventory. It names the backend
// that drives it and holds what that backend says of it.
type InventoryDevice struct {
	Backend string
	Info
}

// Inventory initializes each Runtime and lists their devices in one
// inventory, in the order given. It waits no longer than ctx. A server that
// drives NVIDIA and AMD GPUs side by side opens the cuda and the hip Runtime
// and asks here.
//
// A device two backends both see is listed once, under the first. Devices
// match by PCI bus id. MIG instances share their GPU's bus id, so they match
// by UUID. A Runtime whose initialization failed (a class other than
// [ClassNone]) is passed over. Its failure is returned in skipped. Any other
// error ends the inventory, and so does the end of ctx.
//
// Each runtime reads only its own vendor's visibility variables. cuda reads
// CUDA_VISIBLE_DEVICES. hip reads HIP_VISIBLE_DEVICES and
// ROCR_VISIBLE_DEVICES. It also reads CUDA_VISIBLE_DEVICES when
// HIP_VISIBLE_DEVICES is unset. So on a mixed host, set HIP_VISIBLE_DEVICES,
// so that hiding NVIDIA GPUs does not hide AMD ones.
// A nil ctx panics, naming Inventory.
func Inventory(ctx context.Context, runtimes ...*Runtime) (devices []InventoryDevice, skipped []BackendFailure, err error) {
	nilContext(ctx, "Inventory")
	seen := map[string]bool{}
	for _, r := range runtimes {
		infos, err := r.Devices(ctx)
		if err != nil {
			if ctx.Err() == nil && ClassOf(err) != ClassNone && !errors.Is(err, context.Canceled) {
				skipped = append(skipped, BackendFailure{Backend: r.Name(), Err: err})
				continue
			}
			return devices, skipped, err
		}
		for _, info := range infos {
			key := "bus " + info.PCIBusID
			if info.MIG != nil || info.PCIBusID == "" {
				key = "uuid " + info.UUID
			}
			if info.PCIBusID == "" && info.UUID == "" {
				key = "" // nothing to match by: listed as is
			}
			if key != "" && seen[key] {
				continue
			}
			seen[key] = true
			devices = append(devices, InventoryDevice{Backend: r.Name(), Info: info})
		}
	}
	return devices, skipped, nil
}

// DeviceCount initializes on first use and reports the number of devices.
// A nil ctx panics, naming DeviceCount.
func (r *Runtime) DeviceCount(ctx context.Context) (int, error) {
	nilContext(ctx, "DeviceCount")
	if err := r.Init(ctx); err != nil {
		return 0, err
	}
	return len(*r.devices.Load()), nil
}

// Device initializes on first use and describes one device. An ordinal out
// of range gets an error wrapping [ErrInvalidDevice] with the valid range.
// A nil ctx panics, naming Device.
func (r *Runtime) Device(ctx context.Context, ordinal int) (Info, error) {
	nilContext(ctx, "Device")
	if err := r.Init(ctx); err != nil {
		return Info{}, err
	}
	if err := r.checkOrdinal(ordinal); err != nil {
		return Info{}, err
	}
	return (*r.devices.Load())[ordinal], nil
}

// Devices initializes on first use and describes every device. The slice
// is the caller's.
// A nil ctx panics, naming Devices.
func (r *Runtime) Devices(ctx context.Context) ([]Info, error) {
	nilContext(ctx, "Devices")
	if err := r.Init(ctx); err != nil {
		return nil, err
	}
	return slices.Clone(*r.devices.Load()), nil
}

// CheckDevice returns nil if ordinal names a device in service. It never
// initializes and never touches the backend. For an ordinal the Runtime has
// not, it returns an error wrapping [ErrInvalidDevice]. Until the driver's
// init has succeeded the devices are not known. The error for an ordinal of
// 0 or more then also wraps [driver.ErrNotInitialized]. For a lost device it
// returns the device's [LostDevice], which wraps [ErrDeviceLost]. After
// Shutdown it returns [ErrClosed], before anything else.
func (r *Runtime) CheckDevice(ordinal int) error {
	if r.closed() {
		return ErrClosed
	}
	if err := r.checkOrdinal(ordinal); err != nil {
		return err
	}
	if lost, ok := r.findLost(ordinal); ok {
		return lost
	}
	return nil
}

// checkOrdinal returns nil if ordinal names a device. Otherwise it returns
// an error wrapping ErrInvalidDevice that gives the valid range. While the
// devices are not known, the error for an ordinal of 0 or more also wraps
// driver.ErrNotInitialized.
func (r *Runtime) checkOrdinal(ordinal int) error {
	devices := r.devices.Load()
	switch {
	case ordinal < 0:
		return fmt.Errorf("device: ordinal %d: ordinals start at 0: %w", ordinal, ErrInvalidDevice)
	case devices == nil:
		return &failure{msg: fmt.Sprintf("device: ordinal %d: the %s runtime has not initialized, so its devices are not known yet: %v", ordinal, r.Name(), ErrInvalidDevice),
			causes: []error{ErrInvalidDevice, driver.ErrNotInitialized}}
	case ordinal >= len(*devices):
		n := len(*devices)
		return fmt.Errorf("device: ordinal %d: %s has %d devices, valid ordinals are 0..%d: %w", ordinal, r.Name(), n, n-1, ErrInvalidDevice)
	}
	return nil
}

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
