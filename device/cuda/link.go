//go:build linux && cgo && !nocuda && cudalink

package cuda

/*
#include <cuda.h>
*/
import "C"

import (
	"github.com/gpuinit/gpuinit/device/internal/dynload"
	"github.com/mumax/3/cuda/cu"
)

// With -tags cudalink, libcuda is linked: the dynamic loader has loaded it
// before main, so there is nothing to load, and the calls mumax's cu has go
// through it. mumax panics with a cu.Result on failure; callMumax turns that
// back into the CUresult the backend expects.
func init() {
	api.driverGetVersion = func() (v int, r result) {
		r = callMumax(func() { v = cu.Version() })
		return v, r
	}
	api.init = func() result { return callMumax(func() { cu.Init(0) }) }
	api.deviceGetCount = func() (n int, r result) {
		r = callMumax(func() { n = cu.DeviceGetCount() })
		return n, r
	}
	api.deviceGet = func(ordinal int) (d cuDevice, r result) {
		r = callMumax(func() { d = cuDevice(cu.DeviceGet(ordinal)) })
		return d, r
	}
	api.deviceGetName = func(dev cuDevice) (name string, r result) {
		r = callMumax(func() { name = cu.Device(dev).Name() })
		return name, r
	}
	api.deviceTotalMem = func(dev cuDevice) (n uint64, r result) {
		r = callMumax(func() { n = uint64(cu.Device(dev).TotalMem()) })
		return n, r
	}
	api.deviceGetAttribute = func(attr int, dev cuDevice) (v int, r result) {
		r = callMumax(func() { v = cu.Device(dev).Attribute(cu.DeviceAttribute(attr)) })
		return v, r
	}
}

// callMumax runs f and returns the CUresult mumax panicked with, or 0. Any
// other panic is not the driver's and goes on.
func callMumax(f func()) (r result) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		cr, ok := v.(cu.Result)
		if !ok {
			panic(v)
		}
		r = result(cr)
	}()
	f()
	return 0
}

// loadDriver has nothing to load: the binary is linked with libcuda.
func loadDriver() (dynload.Library, error) {
	return dynload.Library{Path: "libcuda.so.1 (linked)", Preloaded: true}, nil
}

// initializedElsewhere reports whether the linked driver is initialized
// already, by a cgo engine: cuDeviceGetCount answers CUDA_SUCCESS only after
// cuInit.
func initializedElsewhere() bool {
	_, r := api.deviceGetCount()
	return r == 0
}

// linked reports a -tags cudalink build, where the libraries are linked
// rather than loaded.
const linked = true

// RuntimeVersion reports the CUDA version of the cuda.h this binary was built
// against (CUDA_VERSION, 11080 for 11.8): with -tags cudalink that is the
// toolkit the backend was compiled for. The run-time loaded build has no such
// version and does not implement this.
func (*Backend) RuntimeVersion() (int, error) { return int(C.CUDA_VERSION), nil }
