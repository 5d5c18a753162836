//go:build linux && cgo && !nocuda

package cuda

/*
#include "dl.h"
#include "nvml_shim.h"

struct gpuinit_nvml gpuinit_nvml;

#define SYM(f) { #f, offsetof(struct gpuinit_nvml, f), 1 }
const struct gpuinit_symbol gpuinit_nvml_symbols[] = {
	SYM(nvmlInit_v2), SYM(nvmlDeviceGetHandleByUUID), SYM(nvmlDeviceGetHandleByPciBusId_v2),
	SYM(nvmlDeviceGetMemoryInfo), SYM(nvmlErrorString),
};
#undef SYM

*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/internal/dynload"
)

// EnvNVMLLibrary names a libnvidia-ml file to load instead of searching.
const EnvNVMLLibrary = "GPUINIT_NVML_LIBRARY"

// nvml is libnvidia-ml, loaded and initialized at the first MemoryInfo, once
// per process. It is installed with every NVIDIA driver, next to libcuda.
var nvml struct {
	once  sync.Once
	err   error
	slots []nvmlSlot // one per CUDA ordinal
}

// nvmlSlot is one CUDA device's NVML handle, looked up once by UUID (or PCI
// bus id), never by index: NVML numbers devices by PCI bus, CUDA by its own
// order (CUDA_DEVICE_ORDER, CUDA_VISIBLE_DEVICES), and the two differ.
type nvmlSlot struct {
	once   sync.Once
	handle C.nvmlDevice_t
	err    error
}

func loadNVML(devices int) error {
	nvml.once.Do(func() {
		spec := dynload.Spec{Backend: "cuda", Names: []string{"libnvidia-ml.so.1"}, Dirs: []string{"/usr/lib/wsl/lib"},
			Env: EnvNVMLLibrary, Hint: "NVML ships with the NVIDIA driver; in a container, the NVIDIA container toolkit mounts it"}
		_, err := load(spec, &C.gpuinit_nvml_symbols[0], len(C.gpuinit_nvml_symbols),
			unsafe.Pointer(&C.gpuinit_nvml), unsafe.Sizeof(C.gpuinit_nvml), "upgrade the NVIDIA driver")
		if err == nil {
			err = nvmlCheck("nvmlInit_v2", C.gpuinit_nvmlInit())
		}
		nvml.err = err
		nvml.slots = make([]nvmlSlot, devices)
	})
	return nvml.err
}

// nvmlMemory reads a device's free and total memory through NVML.
func nvmlMemory(ordinal int) (free, total uint64, err error) {
	slot := &nvml.slots[ordinal]
	slot.once.Do(func() {
		info, err := describe(ordinal)
		if err != nil {
			slot.err = err
			return
		}
		slot.handle, slot.err = nvmlHandle(info.UUID, info.PCIBusID)
	})
	if slot.err != nil {
		return 0, 0, slot.err
	}
	m := C.gpuinit_nvmlMemory(slot.handle)
	if err := nvmlCheck("nvmlDeviceGetMemoryInfo", m.r); err != nil {
		return 0, 0, err
	}
	return uint64(m.free_), uint64(m.total), nil
}

func nvmlHandle(uuid, busID string) (C.nvmlDevice_t, error) {
	var h C.nvmlDevice_t
	if uuid != "" {
		cs := C.CString(uuid)
		defer C.free(unsafe.Pointer(cs))
		if C.gpuinit_nvmlByUUID(cs, &h) == 0 {
			return h, nil
		}
	}
	if strings.HasPrefix(uuid, "MIG-") {
		// By bus id NVML would give the parent GPU, and with it the whole
		// GPU's memory, not the instance's.
		return nil, fmt.Errorf("cuda: NVML does not know the MIG instance %s", uuid)
	}
	cs := C.CString(busID)
	defer C.free(unsafe.Pointer(cs))
	if err := nvmlCheck("nvmlDeviceGetHandleByPciBusId_v2", C.gpuinit_nvmlByBusID(cs, &h)); err != nil {
		return nil, fmt.Errorf("cuda: NVML does not know the device with UUID %q or PCI bus id %s: %w", uuid, busID, err)
	}
	return h, nil
}

func nvmlCheck(op string, r C.nvmlReturn_t) error {
	if r == 0 {
		return nil
	}
	msg := ""
	if C.gpuinit_nvml.nvmlErrorString != nil {
		msg = C.GoString(C.gpuinit_nvmlError(r))
	}
	return &device.DriverError{Backend: "cuda", Op: op, Code: int(r), Name: "nvmlReturn_t", Message: msg}
}
