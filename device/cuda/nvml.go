//go:build linux && cgo && !nocuda

package cuda

/*
#include <stdlib.h>
#include "nvml_shim.h"

struct gpuinit_nvml gpuinit_nvml;

*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/loader"
)

// nvmlLibrary is where NVML is looked for. It is installed with every
// NVIDIA driver, next to libcuda.
func nvmlLibrary() loader.Spec {
	return loader.Spec{Backend: "cuda", Names: []string{"libnvidia-ml.so.1"}, Dirs: []string{"/usr/lib/wsl/lib"},
		Env: EnvNVMLLibrary, Hint: "NVML ships with the NVIDIA driver; in a container, the NVIDIA container toolkit mounts it",
		Identity: "nvmlInit_v2"}
}

// nvmlSymbols are the NVML functions the backend calls.
var nvmlSymbols = []loader.Symbol{
	{Name: "nvmlInit_v2", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlInit_v2), Required: true},
	{Name: "nvmlDeviceGetHandleByUUID", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetHandleByUUID), Required: true},
	{Name: "nvmlDeviceGetHandleByPciBusId_v2", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetHandleByPciBusId_v2), Required: true},
	{Name: "nvmlDeviceGetMemoryInfo", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetMemoryInfo), Required: true},
	{Name: "nvmlErrorString", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlErrorString), Required: true},
	{Name: "nvmlEventSetCreate", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlEventSetCreate)},
	{Name: "nvmlEventSetFree", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlEventSetFree)},
	{Name: "nvmlDeviceGetSupportedEventTypes", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetSupportedEventTypes)},
	{Name: "nvmlDeviceRegisterEvents", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceRegisterEvents)},
	{Name: "nvmlEventSetWait_v2", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlEventSetWait_v2)},
	{Name: "nvmlDeviceGetPersistenceMode", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetPersistenceMode)},
	{Name: "nvmlDeviceGetEccMode", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetEccMode)},
	{Name: "nvmlDeviceGetTotalEccErrors", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetTotalEccErrors)},
	{Name: "nvmlDeviceGetRemappedRows", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetRemappedRows)},
	{Name: "nvmlDeviceGetCurrentClocksEventReasons", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetCurrentClocksEventReasons)},
	{Name: "nvmlDeviceGetRetiredPages_v2", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetRetiredPages_v2)},
	{Name: "nvmlDeviceGetRetiredPagesPendingStatus", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetRetiredPagesPendingStatus)},
	{Name: "nvmlDeviceGetFieldValues", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetFieldValues)},
	{Name: "nvmlDeviceGetPcieReplayCounter", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetPcieReplayCounter)},
	{Name: "nvmlDeviceGetGpuFabricInfoV", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetGpuFabricInfoV)},
	{Name: "nvmlDeviceIsMigDeviceHandle", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceIsMigDeviceHandle)},
	{Name: "nvmlDeviceGetGpuInstanceId", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetGpuInstanceId)},
	{Name: "nvmlDeviceGetComputeInstanceId", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetComputeInstanceId)},
	{Name: "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle)},
	{Name: "nvmlDeviceGetUUID", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetUUID)},
	{Name: "nvmlDeviceGetName", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetName)},
	{Name: "nvmlDeviceGetPciInfo_v3", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetPciInfo_v3)},
	{Name: "nvmlDeviceGetIndex", Offset: unsafe.Offsetof(C.gpuinit_nvml.nvmlDeviceGetIndex)},
}

// PhysicalIndex reports NVML's index of device ordinal: nvidia-smi's
// number for it, in PCI bus order, which CUDA's ordinal need not be. A MIG
// instance has none of its own (NVML's error says so).
func (*Backend) PhysicalIndex(ordinal int) (int, error) {
	if err := checkOrdinal("nvmlDeviceGetIndex", ordinal); err != nil {
		return -1, err
	}
	handles, err := loadNVML()
	if err != nil {
		return -1, err
	}
	h, err := handles[ordinal]()
	if err != nil {
		return -1, err
	}
	out := C.gpuinit_nvmlIndex(h)
	if err := nvmlCheck("nvmlDeviceGetIndex", out.r); err != nil {
		return -1, err
	}
	return int(out.index), nil
}

// nvmlHandles are each CUDA device's NVML handle, each looked up once, at
// its first use, by UUID (or PCI bus id), never by index: NVML numbers
// devices by PCI bus, CUDA by its own order (CUDA_DEVICE_ORDER,
// CUDA_VISIBLE_DEVICES), and the two differ.
type nvmlHandles []func() (C.nvmlDevice_t, error)

// loadNVML loads and initializes NVML at the first MemoryInfo, once per
// process; Init has succeeded, so the devices are known.
var loadNVML = loader.OnceValue(func() (nvmlHandles, error) {
	if err := initNVML(); err != nil {
		return nil, err
	}
	handles := make(nvmlHandles, state.count.Load())
	for ordinal := range handles {
		handles[ordinal] = loader.OnceValue(func() (C.nvmlDevice_t, error) {
			info, err := describe(ordinal)
			if err != nil {
				return nil, err
			}
			return nvmlHandle(info.UUID, info.PCIBusID)
		})
	}
	return handles, nil
})

// initNVML loads NVML, binds it and calls nvmlInit_v2, once per process.
var initNVML = loader.OnceFunc(func() error {
	spec := nvmlLibrary()
	lib, err := loader.Load(spec)
	if err == nil {
		err = lib.Bind(spec, nvmlSymbols, unsafe.Pointer(&C.gpuinit_nvml), unsafe.Sizeof(C.gpuinit_nvml), "upgrade the NVIDIA driver")
	}
	if err == nil {
		err = nvmlCheck("nvmlInit_v2", C.gpuinit_nvmlInit())
	}
	return err
})

// nvmlMemory reads a device's free and total memory through NVML.
func nvmlMemory(handles nvmlHandles, ordinal int) (free, total uint64, err error) {
	h, err := handles[ordinal]()
	if err != nil {
		return 0, 0, err
	}
	m := C.gpuinit_nvmlMemory(h)
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

// nvmlCheck turns an nvmlReturn_t into an error: nil for NVML_SUCCESS, else
// a *driver.DriverError named by nvml.h's name for the code, with NVML's own
// description.
func nvmlCheck(op string, r C.nvmlReturn_t) error {
	if r == 0 {
		return nil
	}
	msg := ""
	if C.gpuinit_nvml.nvmlErrorString != nil {
		msg = loader.GoString(unsafe.Pointer(C.gpuinit_nvmlError(r)), loader.MaxMessage)
	}
	return drivercodes.NVML.Error(op, int(r), "", msg)
}
