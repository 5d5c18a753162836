//go:build hip && cgo

package hip

/*
#cgo LDFLAGS: -lamdhip64
#include <string.h>
#include <hip/hip_runtime_api.h>

// gpuinit_device_info copies what gpuinit needs out of hipDeviceProp_t, whose
// layout changes between ROCm releases, so Go never sees the struct.
static hipError_t gpuinit_device_info(int ordinal, char *name, size_t name_len,
                                      char *arch, size_t arch_len, size_t *total_mem) {
	hipDeviceProp_t p;
	memset(&p, 0, sizeof p);
	hipError_t err = hipGetDeviceProperties(&p, ordinal);
	if (err != hipSuccess) return err;
	strncpy(name, p.name, name_len - 1);
	name[name_len - 1] = 0;
	strncpy(arch, p.gcnArchName, arch_len - 1);
	arch[arch_len - 1] = 0;
	*total_mem = p.totalGlobalMem;
	return hipSuccess;
}
*/
import "C"

import (
	"context"
	"strings"

	"github.com/gpuinit/gpuinit/device"
)

func init() {
	device.Register("hip", func() (device.Backend, error) { return &Backend{}, nil })
}

// Backend is the HIP runtime. It holds no state of its own; its methods are
// safe for concurrent use, as HIP's are.
type Backend struct{}

// Name returns "hip".
func (*Backend) Name() string { return "hip" }

// Init calls hipInit(0). It cannot be interrupted, so ctx is not consulted.
func (*Backend) Init(context.Context) error {
	return check("hipInit", C.hipInit(0))
}

// DriverVersion calls hipDriverGetVersion, which works before hipInit.
func (*Backend) DriverVersion() (int, error) {
	var v C.int
	err := check("hipDriverGetVersion", C.hipDriverGetVersion(&v))
	return int(v), err
}

// RuntimeVersion calls hipRuntimeGetVersion.
func (*Backend) RuntimeVersion() (int, error) {
	var v C.int
	err := check("hipRuntimeGetVersion", C.hipRuntimeGetVersion(&v))
	return int(v), err
}

// Count calls hipGetDeviceCount.
func (*Backend) Count() (int, error) {
	var n C.int
	if err := check("hipGetDeviceCount", C.hipGetDeviceCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device reads one device's properties. Arch is gcnArchName without its
// feature suffix ("gfx90a:sramecc+:xnack-" becomes "gfx90a").
func (*Backend) Device(ordinal int) (device.Info, error) {
	var name, arch [256]C.char
	var mem C.size_t
	if err := check("hipGetDeviceProperties", C.gpuinit_device_info(C.int(ordinal),
		&name[0], C.size_t(len(name)), &arch[0], C.size_t(len(arch)), &mem)); err != nil {
		return device.Info{}, err
	}
	a, _, _ := strings.Cut(C.GoString(&arch[0]), ":")
	return device.Info{Ordinal: ordinal, Name: C.GoString(&name[0]), Arch: a, TotalMemory: uint64(mem)}, nil
}

func check(op string, err C.hipError_t) error {
	if err == C.hipSuccess {
		return nil
	}
	return driverError(op, int(err), C.GoString(C.hipGetErrorName(err)), C.GoString(C.hipGetErrorString(err)))
}
