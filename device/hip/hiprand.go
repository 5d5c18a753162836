//go:build hip && cgo

package hip

/*
#cgo LDFLAGS: -lhiprand -lamdhip64
#include <stdint.h>
#include <hip/hip_runtime_api.h>
// hiprand.h does not compile as C in these ROCm versions without these.
typedef struct __half_raw __half;
typedef struct rocrand_generator_base_type rocrand_generator_base_type;
#include <hiprand/hiprand.h>
*/
import "C"

import (
	"runtime"
	"unsafe"

	"github.com/gpuinit/gpuinit/device"
)

// NewGenerator creates a hipRAND Philox4x32-10 generator
// (hiprandCreateGenerator) for device ordinal. Its state lives on the host;
// Generate runs it on the device.
func (b *Backend) NewGenerator(ordinal int) (device.Generator, error) {
	g := &Generator{ordinal: ordinal}
	if err := randCheck("hiprandCreateGenerator", C.hiprandCreateGenerator(&g.gen, C.HIPRAND_RNG_PSEUDO_PHILOX4_32_10)); err != nil {
		return nil, err
	}
	return g, nil
}

// Generator is a hipRAND Philox generator. It is not safe for concurrent use.
type Generator struct {
	gen     C.hiprandGenerator_t
	ordinal int
}

// SetSeed calls hiprandSetPseudoRandomGeneratorSeed.
func (g *Generator) SetSeed(seed uint64) error {
	return randCheck("hiprandSetPseudoRandomGeneratorSeed", C.hiprandSetPseudoRandomGeneratorSeed(g.gen, C.ulonglong(seed)))
}

// SetOffset calls hiprandSetGeneratorOffset.
func (g *Generator) SetOffset(offset uint64) error {
	return randCheck("hiprandSetGeneratorOffset", C.hiprandSetGeneratorOffset(g.gen, C.ulonglong(offset)))
}

// Generate makes the generator's device current on a locked OS thread,
// generates len(dst) values into device memory and copies them into dst.
func (g *Generator) Generate(dst []uint32) error {
	if len(dst) == 0 {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check("hipSetDevice", C.hipSetDevice(C.int(g.ordinal))); err != nil {
		return err
	}
	size := C.size_t(4 * len(dst))
	var buf unsafe.Pointer
	if err := check("hipMalloc", C.hipMalloc(&buf, size)); err != nil {
		return err
	}
	defer C.hipFree(buf)
	if err := randCheck("hiprandGenerate", C.hiprandGenerate(g.gen, (*C.uint)(buf), C.size_t(len(dst)))); err != nil {
		return err
	}
	return check("hipMemcpy", C.hipMemcpy(unsafe.Pointer(&dst[0]), buf, size, C.hipMemcpyDeviceToHost))
}

// Close destroys the generator.
func (g *Generator) Close() error {
	return randCheck("hiprandDestroyGenerator", C.hiprandDestroyGenerator(g.gen))
}

func randCheck(op string, s C.hiprandStatus_t) error {
	if s == C.HIPRAND_STATUS_SUCCESS {
		return nil
	}
	return hiprandCodes.Error(op, int(s), "", "")
}
