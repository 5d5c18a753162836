//go:build linux && cgo && !nocuda

package cuda

/*
#cgo cudalink CFLAGS: -DGPUINIT_CUDALINK
#include "generator_shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/loader"
)

// loadCurandOnce loads libcurand at the first generator, once per process.
var loadCurandOnce = loader.OnceFunc(loadCurand)

// NewGenerator creates a cuRAND Philox4x32-10 generator on device ordinal
// (curandCreateGenerator, default ordering) in the device's primary context,
// which is retained at the device's first generator or Do and kept for the
// life of the process. libcurand is loaded at the first call; where it cannot be, the error wraps
// driver.ErrNotSupported and the device stays usable. Generate draws on the
// GPU into device memory and copies the values back.
func (b *Backend) NewGenerator(ordinal int) (driver.Generator, error) {
	if err := checkOrdinal("curandCreateGenerator", ordinal); err != nil {
		return nil, err
	}
	if err := loadCurandOnce(); err != nil {
		return nil, err
	}
	pc, err := retainedPrimary(ordinal)
	if err != nil {
		return nil, err
	}
	g := &Generator{pc: pc}
	err = pc.do(func() error {
		return randCheck("curandCreateGenerator", C.gpuinit_curandCreate(&g.gen, 0))
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// NewHostGenerator creates cuRAND's host Philox generator
// (curandCreateGeneratorHost): it runs on the CPU, needs no GPU, no libcuda
// and no cuInit, and draws the same numbers as the device generator. It loads
// libcurand as NewGenerator does.
func NewHostGenerator() (*Generator, error) {
	if err := loadCurandOnce(); err != nil {
		return nil, err
	}
	g := &Generator{}
	if err := randCheck("curandCreateGeneratorHost", C.gpuinit_curandCreate(&g.gen, 1)); err != nil {
		return nil, err
	}
	return g, nil
}

// Generator is a cuRAND Philox generator: on a device, or on the host. It is
// not safe for concurrent use.
type Generator struct {
	gen C.curandGenerator_t
	pc  *primaryContext                              // nil for a host generator
	buf loader.DeviceBuffer[deviceptr, deviceMemory] // a device generator's, for Generate
}

// deviceMemory is the CUDA driver's device memory, in the current context.
type deviceMemory struct{}

func (deviceMemory) Alloc(bytes int) (deviceptr, error) {
	p, r := memAlloc(bytes)
	return p, check("cuMemAlloc_v2", r)
}

func (deviceMemory) Free(p deviceptr) error { return check("cuMemFree_v2", memFree(p)) }

// within runs f in the generator's context: on a locked thread with the
// primary context current for a device generator, directly for a host one.
func (g *Generator) within(f func() error) error {
	if g.pc == nil {
		return f()
	}
	return g.pc.do(f)
}

// SetSeed calls curandSetPseudoRandomGeneratorSeed.
func (g *Generator) SetSeed(seed uint64) error {
	return g.within(func() error {
		return randCheck("curandSetPseudoRandomGeneratorSeed", C.gpuinit_curandSetSeed(g.gen, C.ulonglong(seed)))
	})
}

// SetOffset calls curandSetGeneratorOffset: the absolute position, in values.
func (g *Generator) SetOffset(offset uint64) error {
	return g.within(func() error {
		return randCheck("curandSetGeneratorOffset", C.gpuinit_curandSetOffset(g.gen, C.ulonglong(offset)))
	})
}

// Generate calls curandGenerate for len(dst) values: into dst for a host
// generator; into device memory, then copied to dst, for a device generator.
func (g *Generator) Generate(dst []uint32) error {
	if len(dst) == 0 {
		return nil
	}
	if g.pc == nil {
		return randCheck("curandGenerate", C.gpuinit_curandGenerateHost(g.gen, (*C.uint)(unsafe.Pointer(&dst[0])), C.size_t(len(dst))))
	}
	return g.pc.do(func() error {
		return loader.DrawInPieces(dst, g.generateOnDevice)
	})
}

// generateOnDevice draws len(dst) <= loader.MaxDrawValues values into the
// device buffer and copies them to dst. The primary context is current.
func (g *Generator) generateOnDevice(dst []uint32) error {
	size := 4 * len(dst)
	buf, err := g.buf.Grow(size)
	if err != nil {
		return err
	}
	if err := randCheck("curandGenerate", C.gpuinit_curandGenerateDevice(g.gen, buf, C.size_t(len(dst)))); err != nil {
		return err
	}
	return check("cuMemcpyDtoH_v2", memcpyDtoH(unsafe.Pointer(&dst[0]), buf, size))
}

// Close frees the device buffer and destroys the generator. The device's
// primary context stays retained, as for Do.
func (g *Generator) Close() error {
	return g.within(func() error {
		err := g.buf.Release()
		if derr := randCheck("curandDestroyGenerator", C.gpuinit_curandDestroy(g.gen)); err == nil {
			err = derr
		}
		return err
	})
}

func randCheck(op string, s C.curandStatus_t) error {
	if s == C.CURAND_STATUS_SUCCESS {
		return nil
	}
	return drivercodes.CURAND.Error(op, int(s), "", "")
}
