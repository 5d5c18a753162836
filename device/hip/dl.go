//go:build linux && cgo && !nohip

package hip

/*
#cgo LDFLAGS: -ldl
#include "dl.h"
#include "shim.h"

struct gpuinit_hip gpuinit_hip;

#define SYM(f) { #f, offsetof(struct gpuinit_hip, f), 1 }
static const struct gpuinit_symbol gpuinit_hip_symbols[] = {
	SYM(hipInit), SYM(hipDriverGetVersion), SYM(hipRuntimeGetVersion), SYM(hipGetDeviceCount),
	SYM(hipDeviceGetName), SYM(hipDeviceTotalMem), SYM(hipDeviceGetPCIBusId),
	SYM(hipGetDevice), SYM(hipSetDevice), SYM(hipMalloc), SYM(hipFree), SYM(hipMemcpy),
	SYM(hipGetErrorName), SYM(hipGetErrorString),
};
#undef SYM

static int gpuinit_hip_bind(void *h, char *missing, size_t missinglen, char *err, size_t errlen) {
	return gpuinit_dl_bind(h, gpuinit_hip_symbols, sizeof gpuinit_hip_symbols / sizeof gpuinit_hip_symbols[0],
	                       &gpuinit_hip, sizeof gpuinit_hip, missing, missinglen, err, errlen);
}
*/
import "C"

import (
	"unsafe"

	"github.com/gpuinit/gpuinit/device/internal/dynload"
)

// cLoader is dynload's view of this package's dlopen.
type cLoader struct{}

func (cLoader) Open(name string, noload bool) (dynload.Handle, string, string) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var path, msg [1024]C.char
	noloadFlag := C.int(0)
	if noload {
		noloadFlag = 1
	}
	h := C.gpuinit_dl_open(cname, noloadFlag, &path[0], C.size_t(len(path)), &msg[0], C.size_t(len(msg)))
	if h == nil {
		return nil, "", C.GoString(&msg[0])
	}
	return h, C.GoString(&path[0]), ""
}

// bindRuntime fills shim.h's table from the loaded libamdhip64; it returns the
// first required function that is missing, with dlerror's text.
func bindRuntime(h dynload.Handle) (missing, msg string) {
	var name, text [256]C.char
	if C.gpuinit_hip_bind(h, &name[0], C.size_t(len(name)), &text[0], C.size_t(len(text))) != 0 {
		return C.GoString(&name[0]), C.GoString(&text[0])
	}
	return "", ""
}
