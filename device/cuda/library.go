//go:build linux && cgo && !nocuda && !cudalink

package cuda

/*
#include "shim.h"

struct gpuinit_cuda gpuinit_cu;
*/
import "C"

import (
	"unsafe"

	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/loader"
)

// driverLibrary is where libcuda is looked for. Only libcuda.so.1: the bare
// libcuda.so is, in build images, the toolkit's link stub, which answers
// CUDA_ERROR_STUB_LIBRARY to every call. WSL2 keeps the driver in
// /usr/lib/wsl/lib.
func driverLibrary() loader.Spec {
	return loader.Spec{
		Backend:  "cuda",
		Names:    []string{"libcuda.so.1"},
		Dirs:     []string{"/usr/lib/wsl/lib"},
		Env:      EnvLibrary,
		Hint:     drivercodes.CUDANotFoundHint,
		Identity: "cuDriverGetVersion",
	}
}

// linked reports a -tags cudalink build, where the libraries are linked
// rather than loaded.
const linked = false

// driverSymbols are the driver functions the backend calls, bound into
// shim.h's table. The versioned names are the ones cuda.h's macros pick.
var driverSymbols = []loader.Symbol{
	{Name: "cuDriverGetVersion", Offset: unsafe.Offsetof(C.gpuinit_cu.cuDriverGetVersion), Required: true},
	{Name: "cuInit", Offset: unsafe.Offsetof(C.gpuinit_cu.cuInit), Required: true},
	{Name: "cuDeviceGetCount", Offset: unsafe.Offsetof(C.gpuinit_cu.cuDeviceGetCount), Required: true},
	{Name: "cuDeviceGet", Offset: unsafe.Offsetof(C.gpuinit_cu.cuDeviceGet), Required: true},
	{Name: "cuDeviceGetName", Offset: unsafe.Offsetof(C.gpuinit_cu.cuDeviceGetName), Required: true},
	{Name: "cuDeviceTotalMem_v2", Offset: unsafe.Offsetof(C.gpuinit_cu.cuDeviceTotalMem_v2), Required: true},
	{Name: "cuDeviceGetAttribute", Offset: unsafe.Offsetof(C.gpuinit_cu.cuDeviceGetAttribute), Required: true},
	{Name: "cuDeviceGetUuid_v2", Offset: unsafe.Offsetof(C.gpuinit_cu.cuDeviceGetUuid_v2)},
	{Name: "cuDeviceGetUuid", Offset: unsafe.Offsetof(C.gpuinit_cu.cuDeviceGetUuid)},
	{Name: "cuDevicePrimaryCtxRetain", Offset: unsafe.Offsetof(C.gpuinit_cu.cuDevicePrimaryCtxRetain), Required: true},
	{Name: "cuDevicePrimaryCtxRelease_v2", Offset: unsafe.Offsetof(C.gpuinit_cu.cuDevicePrimaryCtxRelease_v2), Required: true},
	{Name: "cuDevicePrimaryCtxGetState", Offset: unsafe.Offsetof(C.gpuinit_cu.cuDevicePrimaryCtxGetState), Required: true},
	{Name: "cuCtxGetCurrent", Offset: unsafe.Offsetof(C.gpuinit_cu.cuCtxGetCurrent), Required: true},
	{Name: "cuCtxSetCurrent", Offset: unsafe.Offsetof(C.gpuinit_cu.cuCtxSetCurrent), Required: true},
	{Name: "cuMemGetInfo_v2", Offset: unsafe.Offsetof(C.gpuinit_cu.cuMemGetInfo_v2), Required: true},
	{Name: "cuMemAlloc_v2", Offset: unsafe.Offsetof(C.gpuinit_cu.cuMemAlloc_v2), Required: true},
	{Name: "cuMemFree_v2", Offset: unsafe.Offsetof(C.gpuinit_cu.cuMemFree_v2), Required: true},
	{Name: "cuMemcpyDtoH_v2", Offset: unsafe.Offsetof(C.gpuinit_cu.cuMemcpyDtoH_v2), Required: true},
	{Name: "cuMemsetD32_v2", Offset: unsafe.Offsetof(C.gpuinit_cu.cuMemsetD32_v2), Required: true},
	{Name: "cuGetErrorName", Offset: unsafe.Offsetof(C.gpuinit_cu.cuGetErrorName), Required: true},
	{Name: "cuGetErrorString", Offset: unsafe.Offsetof(C.gpuinit_cu.cuGetErrorString), Required: true},
}

// initializedElsewhere reports whether a libcuda.so.1 that this process
// already has, loaded by a cgo engine, has been initialized: its
// cuDeviceGetCount answers CUDA_SUCCESS, where it answers
// CUDA_ERROR_NOT_INITIALIZED before cuInit. It loads and initializes
// nothing.
func initializedElsewhere() bool {
	lib, ok := loader.Preloaded("libcuda.so.1")
	if !ok {
		return false
	}
	count := lib.Symbol("cuDeviceGetCount")
	return count != nil && C.gpuinit_cuDeviceGetCountAt(count) == 0
}

// loadDriver loads libcuda and binds driverSymbols into shim.h's table.
func loadDriver() (loader.Library, error) {
	spec := driverLibrary()
	lib, err := loader.Load(spec)
	if err != nil {
		return lib, err
	}
	return lib, lib.Bind(spec, driverSymbols, unsafe.Pointer(&C.gpuinit_cu), unsafe.Sizeof(C.gpuinit_cu),
		"the driver is older than this backend supports (CUDA 11.0, driver R450, or later): upgrade the NVIDIA driver")
}
