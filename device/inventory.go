package device

import (
	"context"
	"errors"
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
