//go:build cuda && cgo

package cuda

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>

static const char *gpuinit_cu_error_name(CUresult r) {
	const char *s = 0;
	if (cuGetErrorName(r, &s) != CUDA_SUCCESS) return 0;
	return s;
}

static const char *gpuinit_cu_error_string(CUresult r) {
	const char *s = 0;
	if (cuGetErrorString(r, &s) != CUDA_SUCCESS) return 0;
	return s;
}
*/
import "C"

import (
	"context"
	"fmt"

	"github.com/gpuinit/gpuinit/device"
	"github.com/mumax/3/cuda/cu"
)

func init() {
	device.Register("cuda", func() (device.Backend, error) { return &Backend{}, nil })
}

// Backend is the CUDA driver. It holds no state of its own: the driver keeps it.
// Its methods are safe for concurrent use, as the driver's are.
type Backend struct{}

// Name returns "cuda".
func (*Backend) Name() string { return "cuda" }

// Init calls cuInit(0). The driver cannot be interrupted, so ctx is not consulted.
func (*Backend) Init(context.Context) error {
	return call("cuInit", func() { cu.Init(0) })
}

// DriverVersion calls cuDriverGetVersion, which works before cuInit.
func (*Backend) DriverVersion() (v int, err error) {
	err = call("cuDriverGetVersion", func() { v = cu.Version() })
	return v, err
}

// RuntimeVersion reports the CUDA version this binary was built against (the
// CUDA_VERSION of its headers, 11080 for 11.8): with DriverVersion it shows
// whether the driver is new enough for it.
func (*Backend) RuntimeVersion() (int, error) { return cu.CUDA_VERSION, nil }

// Count calls cuDeviceGetCount.
func (*Backend) Count() (n int, err error) {
	err = call("cuDeviceGetCount", func() { n = cu.DeviceGetCount() })
	return n, err
}

// Device reads one device's name, compute capability and total memory.
func (*Backend) Device(ordinal int) (info device.Info, err error) {
	err = call("cuDeviceGet", func() {
		d := cu.DeviceGet(ordinal)
		major, minor := d.ComputeCapability()
		info = device.Info{
			Ordinal:     ordinal,
			Name:        d.Name(),
			Arch:        fmt.Sprintf("sm_%d%d", major, minor),
			TotalMemory: uint64(d.TotalMem()),
		}
	})
	return info, err
}

// call runs f, which calls into mumax's cu, and turns the cu.Result it panics
// with into a *device.DriverError. Any other panic is not the driver's and goes on.
func call(op string, f func()) (err error) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		r, ok := v.(cu.Result)
		if !ok {
			panic(v)
		}
		err = resultError(op, int(r))
	}()
	f()
	return nil
}

// resultError builds the error for a CUresult, with the driver's own name and
// description where it has them.
func resultError(op string, code int) error {
	var name, message string
	if s := C.gpuinit_cu_error_name(C.CUresult(code)); s != nil {
		name = C.GoString(s)
	}
	if s := C.gpuinit_cu_error_string(C.CUresult(code)); s != nil {
		message = C.GoString(s)
	}
	return driverCodes.Error(op, code, name, message)
}

// check turns a CUresult from this package's own cgo into an error.
func check(op string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return resultError(op, int(r))
}
