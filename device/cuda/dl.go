//go:build linux && cgo && !nocuda && !cudalink

package cuda

/*
#cgo LDFLAGS: -ldl
#include "dl.h"
#include "shim.h"

struct gpuinit_cuda gpuinit_cu;

#define SYM(f, req) { #f, offsetof(struct gpuinit_cuda, f), req }
const struct gpuinit_symbol gpuinit_cuda_symbols[] = {
	SYM(cuDriverGetVersion, 1), SYM(cuInit, 1), SYM(cuDeviceGetCount, 1), SYM(cuDeviceGet, 1),
	SYM(cuDeviceGetName, 1), SYM(cuDeviceTotalMem_v2, 1), SYM(cuDeviceGetAttribute, 1),
	SYM(cuDeviceGetUuid_v2, 0), SYM(cuDeviceGetUuid, 0),
	SYM(cuDevicePrimaryCtxRetain, 1), SYM(cuDevicePrimaryCtxRelease_v2, 1), SYM(cuDevicePrimaryCtxGetState, 1),
	SYM(cuCtxGetCurrent, 1), SYM(cuCtxSetCurrent, 1), SYM(cuMemGetInfo_v2, 1),
	SYM(cuMemAlloc_v2, 1), SYM(cuMemFree_v2, 1), SYM(cuMemcpyDtoH_v2, 1),
	SYM(cuGetErrorName, 1), SYM(cuGetErrorString, 1),
};
#undef SYM

*/
import "C"

import (
	"unsafe"

	"github.com/gpuinit/gpuinit/device/internal/dynload"
)

// loadDriver loads libcuda and binds every function into shim.h's table.
func loadDriver() (dynload.Library, error) {
	return load(driverLibrary(), &C.gpuinit_cuda_symbols[0], len(C.gpuinit_cuda_symbols),
		unsafe.Pointer(&C.gpuinit_cu), unsafe.Sizeof(C.gpuinit_cu),
		"the driver is older than this backend supports (CUDA 11.0, driver R450, or later): upgrade the NVIDIA driver")
}
