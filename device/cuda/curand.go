//go:build cuda && cgo

package cuda

/*
#cgo LDFLAGS: -lcurand -lcuda
#include <stdint.h>
#include <cuda.h>
#include <curand.h>

// The device pointer is an integer handle to Go; cast it here, not in Go.
static curandStatus_t gpuinit_curand_generate_device(curandGenerator_t g, CUdeviceptr p, size_t n) {
	return curandGenerate(g, (unsigned int *)(uintptr_t)p, n);
}
*/
import "C"

import (
	"unsafe"

	"github.com/gpuinit/gpuinit/device"
)

// NewGenerator creates a cuRAND Philox4x32-10 generator on device ordinal
// (curandCreateGenerator, default ordering) in the device's primary context.
// Generate draws on the GPU into device memory and copies the values back.
func (b *Backend) NewGenerator(ordinal int) (device.Generator, error) {
	pc, err := RetainPrimaryContext(ordinal)
	if err != nil {
		return nil, err
	}
	g := &Generator{pc: pc}
	err = pc.Do(func() error {
		return curandCheck("curandCreateGenerator", C.curandCreateGenerator(&g.gen, C.CURAND_RNG_PSEUDO_PHILOX4_32_10))
	})
	if err != nil {
		_ = pc.Release()
		return nil, err
	}
	return g, nil
}

// NewHostGenerator creates cuRAND's host Philox generator
// (curandCreateGeneratorHost): it runs on the CPU, needs no GPU and no cuInit,
// and draws the same numbers as the device generator.
func NewHostGenerator() (*Generator, error) {
	g := &Generator{}
	if err := curandCheck("curandCreateGeneratorHost", C.curandCreateGeneratorHost(&g.gen, C.CURAND_RNG_PSEUDO_PHILOX4_32_10)); err != nil {
		return nil, err
	}
	return g, nil
}

// Generator is a cuRAND Philox generator. It is not safe for concurrent use.
type Generator struct {
	gen C.curandGenerator_t
	pc  *PrimaryContext // nil for a host generator
}

// do runs f in the generator's context: on a locked thread with the primary
// context current for a device generator, directly for a host one.
func (g *Generator) do(f func() error) error {
	if g.pc == nil {
		return f()
	}
	return g.pc.Do(f)
}

// SetSeed calls curandSetPseudoRandomGeneratorSeed.
func (g *Generator) SetSeed(seed uint64) error {
	return g.do(func() error {
		return curandCheck("curandSetPseudoRandomGeneratorSeed", C.curandSetPseudoRandomGeneratorSeed(g.gen, C.ulonglong(seed)))
	})
}

// SetOffset calls curandSetGeneratorOffset: the absolute position, in values.
func (g *Generator) SetOffset(offset uint64) error {
	return g.do(func() error {
		return curandCheck("curandSetGeneratorOffset", C.curandSetGeneratorOffset(g.gen, C.ulonglong(offset)))
	})
}

// Generate calls curandGenerate for len(dst) values: into dst for a host
// generator; into device memory, then copied to dst, for a device generator.
func (g *Generator) Generate(dst []uint32) error {
	if len(dst) == 0 {
		return nil
	}
	if g.pc == nil {
		return curandCheck("curandGenerate", C.curandGenerate(g.gen, (*C.uint)(unsafe.Pointer(&dst[0])), C.size_t(len(dst))))
	}
	return g.pc.Do(func() error {
		size := C.size_t(4 * len(dst))
		var buf C.CUdeviceptr
		if err := check("cuMemAlloc", C.cuMemAlloc(&buf, size)); err != nil {
			return err
		}
		defer C.cuMemFree(buf)
		if err := curandCheck("curandGenerate", C.gpuinit_curand_generate_device(g.gen, buf, C.size_t(len(dst)))); err != nil {
			return err
		}
		return check("cuMemcpyDtoH", C.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), buf, size))
	})
}

// Close destroys the generator and releases its context.
func (g *Generator) Close() error {
	err := g.do(func() error { return curandCheck("curandDestroyGenerator", C.curandDestroyGenerator(g.gen)) })
	if g.pc != nil {
		if rerr := g.pc.Release(); err == nil {
			err = rerr
		}
	}
	return err
}

func curandCheck(op string, s C.curandStatus_t) error {
	if s == C.CURAND_STATUS_SUCCESS {
		return nil
	}
	return curandCodes.Error(op, int(s), "", "")
}
