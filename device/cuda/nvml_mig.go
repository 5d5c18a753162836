//go:build linux && cgo && !nocuda

package cuda

/*
#include "nvml_shim.h"
*/
import "C"

import (
	"strings"
	"unsafe"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/loader"
)

// migOf reads what NVML says of the MIG instance with this UUID: its GPU- and
// compute-instance ids, its profile and its parent GPU. NVML is loaded for it
// (a MIG instance only). The fields NVML cannot give stay empty; a whole GPU's
// UUID gives nil.
func migOf(uuid string) *driver.MIG {
	out := &driver.MIG{GPUInstance: -1, ComputeInstance: -1}
	if err := initNVML(); err != nil {
		return out
	}
	h, err := nvmlHandle(uuid, "")
	if err != nil {
		return out
	}
	m := C.gpuinit_nvmlMIG(h)
	if m.r == 0 && m.mig == 0 {
		return nil
	}
	if m.mig != 0 {
		out.GPUInstance, out.ComputeInstance = int(m.gi), int(m.ci)
		out.Profile = profileOf(loader.GoString(unsafe.Pointer(&m.name[0]), len(m.name)))
	}
	if m.r == 0 {
		out.ParentUUID = loader.GoString(unsafe.Pointer(&m.parent_uuid[0]), len(m.parent_uuid))
		out.ParentPCIBusID = busIDOf(loader.GoString(unsafe.Pointer(&m.parent_bus[0]), len(m.parent_bus)))
	}
	return out
}

// profileOf is the MIG profile in NVML's name of a MIG device: "1g.10gb" in
// "NVIDIA A100-SXM4-80GB MIG 1g.10gb".
func profileOf(name string) string {
	if i := strings.LastIndex(name, "MIG "); i >= 0 {
		return strings.TrimSpace(name[i+len("MIG "):])
	}
	return ""
}

// busIDOf spells NVML's bus id ("00000001:3B:02.0") as Info does
// ("0001:3b:02.0").
func busIDOf(nvml string) string {
	s := strings.ToLower(nvml)
	if i := strings.IndexByte(s, ':'); i > 4 {
		s = s[i-4:]
	}
	return s
}
