//go:build linux && cgo && !nohip

package hip

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/gpuinit/gpuinit/device/internal/loader"
)

// The HIP runtime's calls, through shim.h's table; each returns the raw
// hipError_t.

func hipInit() int { return int(C.gpuinit_hipInit()) }

func driverGetVersion() (int, int) {
	var v C.int
	r := C.gpuinit_hipDriverGetVersion(&v)
	return int(v), int(r)
}

func runtimeGetVersion() (int, int) {
	var v C.int
	r := C.gpuinit_hipRuntimeGetVersion(&v)
	return int(v), int(r)
}

func getDeviceCount() (int, int) {
	var n C.int
	r := C.gpuinit_hipGetDeviceCount(&n)
	return int(n), int(r)
}

func deviceGetName(ordinal int) (string, int) {
	var name [256]C.char
	r := C.gpuinit_hipDeviceGetName(&name[0], C.int(len(name)), C.int(ordinal))
	return loader.GoString(unsafe.Pointer(&name[0]), len(name)), int(r)
}

func deviceTotalMem(ordinal int) (uint64, int) {
	var n C.size_t
	r := C.gpuinit_hipDeviceTotalMem(&n, C.int(ordinal))
	return uint64(n), int(r)
}

func deviceGetPCIBusID(ordinal int) (string, int) {
	var id [64]C.char
	r := C.gpuinit_hipDeviceGetPCIBusId(&id[0], C.int(len(id)), C.int(ordinal))
	return loader.GoString(unsafe.Pointer(&id[0]), len(id)), int(r)
}

// swapDevice makes ordinal current on this OS thread and returns the one it
// replaced; the caller must hold the thread (runtime.LockOSThread).
func swapDevice(ordinal int) (prev int, r int) {
	var p C.int
	r = int(C.gpuinit_hipSwapDevice(C.int(ordinal), &p))
	return int(p), r
}

func setDevice(ordinal int) int { return int(C.gpuinit_hipSetDevice(C.int(ordinal))) }

func malloc(bytes int) (unsafe.Pointer, int) {
	var p unsafe.Pointer
	r := C.gpuinit_hipMalloc(&p, C.size_t(bytes))
	return p, int(r)
}

func free(p unsafe.Pointer) int { return int(C.gpuinit_hipFree(p)) }

func memcpyDtoH(dst, src unsafe.Pointer, bytes int) int {
	return int(C.gpuinit_hipMemcpyDtoH(dst, src, C.size_t(bytes)))
}

func errorStrings(r int) (name, desc string) {
	var n, d *C.char
	C.gpuinit_hipErrorStrings(C.hipError_t(r), &n, &d)
	return loader.GoString(unsafe.Pointer(n), loader.MaxMessage), loader.GoString(unsafe.Pointer(d), loader.MaxMessage)
}
