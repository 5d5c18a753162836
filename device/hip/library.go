//go:build linux && cgo && !nohip

package hip

/*
#include "shim.h"

struct gpuinit_hip gpuinit_hip;
*/
import "C"

import (
	"os"
	"unsafe"

	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/loader"
)

// runtimeLibrary is where libamdhip64 is looked for: every ROCm major's
// soname, newest first, then the unversioned name, through the loader's
// search, then ROCm's usual homes and WSL2's driver directory.
func runtimeLibrary() loader.Spec {
	return loader.Spec{
		Backend:  "hip",
		Names:    []string{"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"},
		Dirs:     loader.Dirs([]string{os.Getenv("ROCM_PATH")}, "lib", "/opt/rocm/lib", "/usr/lib/wsl/lib"),
		Env:      EnvLibrary,
		Hint:     drivercodes.HIPNotFoundHint(os.Getenv("ROCM_PATH")),
		Identity: "hipInit",
	}
}

// runtimeSymbols are the HIP functions the backend calls, bound into shim.h's
// table.
var runtimeSymbols = []loader.Symbol{
	{Name: "hipInit", Offset: unsafe.Offsetof(C.gpuinit_hip.hipInit), Required: true},
	{Name: "hipDriverGetVersion", Offset: unsafe.Offsetof(C.gpuinit_hip.hipDriverGetVersion), Required: true},
	{Name: "hipRuntimeGetVersion", Offset: unsafe.Offsetof(C.gpuinit_hip.hipRuntimeGetVersion), Required: true},
	{Name: "hipGetDeviceCount", Offset: unsafe.Offsetof(C.gpuinit_hip.hipGetDeviceCount), Required: true},
	{Name: "hipDeviceGetName", Offset: unsafe.Offsetof(C.gpuinit_hip.hipDeviceGetName), Required: true},
	{Name: "hipDeviceTotalMem", Offset: unsafe.Offsetof(C.gpuinit_hip.hipDeviceTotalMem), Required: true},
	{Name: "hipDeviceGetPCIBusId", Offset: unsafe.Offsetof(C.gpuinit_hip.hipDeviceGetPCIBusId), Required: true},
	{Name: "hipGetDevice", Offset: unsafe.Offsetof(C.gpuinit_hip.hipGetDevice), Required: true},
	{Name: "hipSetDevice", Offset: unsafe.Offsetof(C.gpuinit_hip.hipSetDevice), Required: true},
	{Name: "hipMalloc", Offset: unsafe.Offsetof(C.gpuinit_hip.hipMalloc), Required: true},
	{Name: "hipFree", Offset: unsafe.Offsetof(C.gpuinit_hip.hipFree), Required: true},
	{Name: "hipMemcpy", Offset: unsafe.Offsetof(C.gpuinit_hip.hipMemcpy), Required: true},
	{Name: "hipMemset", Offset: unsafe.Offsetof(C.gpuinit_hip.hipMemset), Required: true},
	{Name: "hipGetErrorName", Offset: unsafe.Offsetof(C.gpuinit_hip.hipGetErrorName), Required: true},
	{Name: "hipGetErrorString", Offset: unsafe.Offsetof(C.gpuinit_hip.hipGetErrorString), Required: true},
}

// loadRuntime loads libamdhip64 and binds runtimeSymbols into shim.h's table.
func loadRuntime() (loader.Library, error) {
	spec := runtimeLibrary()
	lib, err := loader.Load(spec)
	if err != nil {
		return lib, err
	}
	return lib, lib.Bind(spec, runtimeSymbols, unsafe.Pointer(&C.gpuinit_hip), unsafe.Sizeof(C.gpuinit_hip),
		"the HIP runtime is older than this backend supports (ROCm 5.0 or later): upgrade ROCm")
}
