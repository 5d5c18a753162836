//go:build linux && cgo && !nocuda && cudalink

package cuda

/*
#include <cuda.h>
*/
import "C"

import (
	"sync"

	"github.com/gpuinit/gpuinit/device/cuda/internal/linkapi"
	"github.com/gpuinit/gpuinit/device/internal/loader"
)

// useOverride points the driver calls at linkapi.Override where a binding
// set one (github.com/gpuinit/gpuinit/device/cuda/cudalink, for mumax's cu);
// otherwise they call the linked libcuda through the shim, as the default
// entries of api do.
func useOverride() {
	o := linkapi.Override
	if o == nil {
		return
	}
	api.driverGetVersion = o.DriverGetVersion
	api.init = o.Init
	api.deviceGetCount = o.DeviceGetCount
	api.deviceGet = func(ordinal int) (cuDevice, result) { d, r := o.DeviceGet(ordinal); return cuDevice(d), r }
	api.deviceGetName = func(dev cuDevice) (string, result) { return o.DeviceGetName(int32(dev)) }
	api.deviceTotalMem = func(dev cuDevice) (uint64, result) { return o.DeviceTotalMem(int32(dev)) }
	api.deviceGetAttribute = func(attr int, dev cuDevice) (int, result) { return o.DeviceGetAttribute(attr, int32(dev)) }
}

// loadDriver has nothing to load: the binary is linked with libcuda. It
// takes a binding's override, if one was set, first.
func loadDriver() (loader.Library, error) {
	overrideOnce.Do(useOverride)
	return loader.Library{Path: "libcuda.so.1 (linked)", Preloaded: true}, nil
}

var overrideOnce sync.Once

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
