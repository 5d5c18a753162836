//go:build linux && cgo && !nocuda

package cuda

/*
#cgo cudalink CFLAGS: -DGPUINIT_CUDALINK
#cgo cudalink LDFLAGS: -lcuda
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/gpuinit/gpuinit/device/internal/loader"
)

// result is a CUresult.
type result = int

// cuDevice is a CUdevice.
type cuDevice = int32

// api is the driver as the backend calls it. By default every entry goes
// through shim.h's helpers over the table dlsym filled; with -tags cudalink
// the same helpers call the linked libcuda, and link.go points the entries at
// a binding's override where one is set (mumax's cu, through the nested
// module device/cuda/cudalink). The backend's logic is written once, over
// this table.
var api = struct {
	driverGetVersion   func() (int, result)
	init               func() result
	deviceGetCount     func() (int, result)
	deviceGet          func(ordinal int) (cuDevice, result)
	deviceGetName      func(dev cuDevice) (string, result)
	deviceTotalMem     func(dev cuDevice) (uint64, result)
	deviceGetAttribute func(attr int, dev cuDevice) (int, result)
}{
	driverGetVersion: func() (int, result) {
		var v C.int
		r := C.gpuinit_cuDriverGetVersion(&v)
		return int(v), result(r)
	},
	init: func() result { return result(C.gpuinit_cuInit()) },
	deviceGetCount: func() (int, result) {
		c := C.gpuinit_cuDeviceGetCount()
		return int(c.n), result(c.r)
	},
	deviceGet: func(ordinal int) (cuDevice, result) {
		var d C.CUdevice
		r := C.gpuinit_cuDeviceGet(&d, C.int(ordinal))
		return cuDevice(d), result(r)
	},
	deviceGetName: func(dev cuDevice) (string, result) {
		var name [256]C.char
		r := C.gpuinit_cuDeviceGetName(&name[0], C.int(len(name)), C.CUdevice(dev))
		return loader.GoString(unsafe.Pointer(&name[0]), len(name)), result(r)
	},
	deviceTotalMem: func(dev cuDevice) (uint64, result) {
		var n C.size_t
		r := C.gpuinit_cuDeviceTotalMem(&n, C.CUdevice(dev))
		return uint64(n), result(r)
	},
	deviceGetAttribute: func(attr int, dev cuDevice) (int, result) {
		var v C.int
		r := C.gpuinit_cuDeviceGetAttribute(&v, C.int(attr), C.CUdevice(dev))
		return int(v), result(r)
	},
}

// The calls below have no mumax equivalent, or must be one C call; both modes
// make them through shim.h.

// deviceUUID returns the device's UUID bytes, and whether they came from
// cuDeviceGetUuid_v2 (a MIG instance's own UUID) or the older call.
func deviceUUID(dev cuDevice) (uuid [16]byte, v2 bool, r result) {
	var b [16]C.uchar
	var isV2 C.int
	r = result(C.gpuinit_cuDeviceGetUuid(&b[0], C.CUdevice(dev), &isV2))
	for i := range uuid {
		uuid[i] = byte(b[i])
	}
	return uuid, isV2 != 0, r
}

// deviceUUIDv1 returns what the older cuDeviceGetUuid gives.
func deviceUUIDv1(dev cuDevice) (uuid [16]byte, r result) {
	var b [16]C.uchar
	r = result(C.gpuinit_cuDeviceGetUuidV1(&b[0], C.CUdevice(dev)))
	for i := range uuid {
		uuid[i] = byte(b[i])
	}
	return uuid, r
}

// errorStrings returns the driver's own name and description of r, or "".
func errorStrings(r result) (name, desc string) {
	var n, d *C.char
	C.gpuinit_cuErrorStrings(C.CUresult(r), &n, &d)
	return loader.GoString(unsafe.Pointer(n), loader.MaxMessage), loader.GoString(unsafe.Pointer(d), loader.MaxMessage)
}

// cuContext is a CUcontext.
type cuContext = C.CUcontext

func primaryCtxRetain(dev cuDevice) (cuContext, result) {
	var c C.CUcontext
	r := C.gpuinit_cuDevicePrimaryCtxRetain(&c, C.CUdevice(dev))
	return c, result(r)
}

// swapContext makes c current on this OS thread and returns the one it
// replaced; the caller must hold the thread (runtime.LockOSThread).
func swapContext(c cuContext) (prev cuContext, r result) {
	r = result(C.gpuinit_cuSwapContext(c, &prev))
	return prev, r
}

func setContext(c cuContext) result { return result(C.gpuinit_cuSetContext(c)) }

// memInfoIfActive reads a device's free and total memory only if its
// primary context is already active; it creates nothing.
func memInfoIfActive(dev cuDevice) (free, total uint64, active bool, r result) {
	var f, t C.size_t
	var a C.int
	r = result(C.gpuinit_cuMemInfoIfActive(C.CUdevice(dev), &f, &t, &a))
	return uint64(f), uint64(t), a != 0, r
}

// deviceptr is a CUdeviceptr: device memory, an integer to Go.
type deviceptr = C.CUdeviceptr

func memAlloc(bytes int) (deviceptr, result) {
	var p C.CUdeviceptr
	r := C.gpuinit_cuMemAlloc(&p, C.size_t(bytes))
	return p, result(r)
}

func memFree(p deviceptr) result { return result(C.gpuinit_cuMemFree(p)) }

func memcpyDtoH(dst unsafe.Pointer, src deviceptr, bytes int) result {
	return result(C.gpuinit_cuMemcpyDtoH(dst, src, C.size_t(bytes)))
}
