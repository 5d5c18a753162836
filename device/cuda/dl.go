//go:build linux && cgo && !nocuda && !cudalink

package cuda

/*
#cgo LDFLAGS: -ldl
#include "dl.h"
#include "shim.h"

struct gpuinit_cuda gpuinit_cu;

#define SYM(f, req) { #f, offsetof(struct gpuinit_cuda, f), req }
static const struct gpuinit_symbol gpuinit_cuda_symbols[] = {
	SYM(cuDriverGetVersion, 1), SYM(cuInit, 1), SYM(cuDeviceGetCount, 1), SYM(cuDeviceGet, 1),
	SYM(cuDeviceGetName, 1), SYM(cuDeviceTotalMem_v2, 1), SYM(cuDeviceGetAttribute, 1),
	SYM(cuDeviceGetUuid_v2, 0), SYM(cuDeviceGetUuid, 0),
	SYM(cuDevicePrimaryCtxRetain, 1), SYM(cuDevicePrimaryCtxRelease_v2, 1), SYM(cuDevicePrimaryCtxGetState, 1),
	SYM(cuCtxGetCurrent, 1), SYM(cuCtxSetCurrent, 1), SYM(cuMemGetInfo_v2, 1),
	SYM(cuMemAlloc_v2, 1), SYM(cuMemFree_v2, 1), SYM(cuMemcpyDtoH_v2, 1),
	SYM(cuGetErrorName, 1), SYM(cuGetErrorString, 1),
};
#undef SYM

static int gpuinit_cuda_bind(void *h, char *missing, size_t missinglen, char *err, size_t errlen) {
	return gpuinit_dl_bind(h, gpuinit_cuda_symbols, sizeof gpuinit_cuda_symbols / sizeof gpuinit_cuda_symbols[0],
	                       &gpuinit_cu, sizeof gpuinit_cu, missing, missinglen, err, errlen);
}
*/
import "C"

import "github.com/gpuinit/gpuinit/device/internal/dynload"

// bindDriver fills shim.h's table from the loaded libcuda; it returns the
// first required function that is missing, with dlerror's text.
func bindDriver(h dynload.Handle) (missing, msg string) {
	var name, text [256]C.char
	if C.gpuinit_cuda_bind(h, &name[0], C.size_t(len(name)), &text[0], C.size_t(len(text))) != 0 {
		return C.GoString(&name[0]), C.GoString(&text[0])
	}
	return "", ""
}
