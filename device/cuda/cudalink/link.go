//go:build linux && cgo && cudalink

package cudalink

import (
	"github.com/gpuinit/gpuinit/device/cuda/internal/linkapi"
	"github.com/mumax/3/cuda/cu"
)

// mumax panics with a cu.Result on failure; call turns that back into the
// CUresult the backend expects.
func init() {
	linkapi.Override = &linkapi.API{
		DriverGetVersion: func() (v, r int) {
			r = call(func() { v = cu.Version() })
			return v, r
		},
		Init: func() int { return call(func() { cu.Init(0) }) },
		DeviceGetCount: func() (n, r int) {
			r = call(func() { n = cu.DeviceGetCount() })
			return n, r
		},
		DeviceGet: func(ordinal int) (d int32, r int) {
			r = call(func() { d = int32(cu.DeviceGet(ordinal)) })
			return d, r
		},
		DeviceGetName: func(dev int32) (name string, r int) {
			r = call(func() { name = cu.Device(dev).Name() })
			return name, r
		},
		DeviceTotalMem: func(dev int32) (n uint64, r int) {
			r = call(func() { n = uint64(cu.Device(dev).TotalMem()) })
			return n, r
		},
		DeviceGetAttribute: func(attr int, dev int32) (v, r int) {
			r = call(func() { v = cu.Device(dev).Attribute(cu.DeviceAttribute(attr)) })
			return v, r
		},
	}
}

// call runs f and returns the CUresult mumax panicked with, or 0. Any other
// panic is not the driver's and goes on.
func call(f func()) (r int) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		cr, ok := v.(cu.Result)
		if !ok {
			panic(v)
		}
		r = int(cr)
	}()
	f()
	return 0
}
