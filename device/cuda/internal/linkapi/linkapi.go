// Package linkapi is how a -tags cudalink build of the cuda backend takes
// its driver calls from another binding of the linked libcuda: the nested
// module github.com/gpuinit/gpuinit/device/cuda/cudalink sets Override from
// an init function to route them through mumax's cu. It lives here, not in
// that module, so that only a program that imports the module downloads
// mumax: import paths, not modules, decide who may use an internal package.
package linkapi

// API is the driver calls the backend makes through a binding, each
// returning the CUresult (0 for success).
type API struct {
	DriverGetVersion   func() (version, result int)
	Init               func() (result int)
	DeviceGetCount     func() (n, result int)
	DeviceGet          func(ordinal int) (dev int32, result int)
	DeviceGetName      func(dev int32) (name string, result int)
	DeviceTotalMem     func(dev int32) (bytes uint64, result int)
	DeviceGetAttribute func(attr int, dev int32) (v, result int)
}

// Override is the binding to call through, or nil for the backend's own
// calls into the linked libcuda. It is set from an init function and read
// at the backend's first Init, never after.
var Override *API
