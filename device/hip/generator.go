//go:build linux && cgo && !nohip

package hip

/*
#include "generator_shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/loader"
)

// NewGenerator creates a hipRAND Philox4x32-10 generator
// (hiprandCreateGenerator) for device ordinal. Its state lives on the host;
// Generate runs it on the device. libhiprand is loaded at the first call.
func (b *Backend) NewGenerator(ordinal int) (driver.Generator, error) {
	if _, err := checkOrdinal("hiprandCreateGenerator", ordinal); err != nil {
		return nil, err
	}
	if err := loadHiprandOnce(); err != nil {
		return nil, err
	}
	// rocRAND binds a generator to the device current when it is created.
	var gen C.hiprandGenerator_t
	if err := onDevice(ordinal, func() error {
		return randCheck("hiprandCreateGenerator", C.gpuinit_hiprandCreate(&gen))
	}); err != nil {
		return nil, err
	}
	return &Generator{gen: gen, ordinal: ordinal}, nil
}

// Generator is a hipRAND Philox generator. It is not safe for concurrent use.
type Generator struct {
	gen     C.hiprandGenerator_t
	ordinal int
	buf     loader.DeviceBuffer[unsafe.Pointer, deviceMemory] // for Generate
}

// deviceMemory is HIP's device memory, on the current device.
type deviceMemory struct{}

func (deviceMemory) Alloc(bytes int) (unsafe.Pointer, error) {
	p, r := malloc(bytes)
	return p, check("hipMalloc", r)
}

func (deviceMemory) Free(p unsafe.Pointer) error { return check("hipFree", free(p)) }

// SetSeed calls hiprandSetPseudoRandomGeneratorSeed.
func (g *Generator) SetSeed(seed uint64) error {
	return randCheck("hiprandSetPseudoRandomGeneratorSeed", C.gpuinit_hiprandSetSeed(g.gen, C.ulonglong(seed)))
}

// SetOffset calls hiprandSetGeneratorOffset.
func (g *Generator) SetOffset(offset uint64) error {
	return randCheck("hiprandSetGeneratorOffset", C.gpuinit_hiprandSetOffset(g.gen, C.ulonglong(offset)))
}

// Generate makes the generator's device current on a locked OS thread,
// generates len(dst) values into device memory, copies them into dst, and
// restores the thread's previous device.
func (g *Generator) Generate(dst []uint32) error {
	if len(dst) == 0 {
		return nil
	}
	return onDevice(g.ordinal, func() error {
		return loader.DrawInPieces(dst, g.generateOnDevice)
	})
}

// generateOnDevice draws len(dst) <= loader.MaxDrawValues values into the
// device buffer and copies them to dst. The device is current.
func (g *Generator) generateOnDevice(dst []uint32) error {
	size := 4 * len(dst)
	buf, err := g.buf.Grow(size)
	if err != nil {
		return err
	}
	if err := randCheck("hiprandGenerate", C.gpuinit_hiprandGenerate(g.gen, buf, C.size_t(len(dst)))); err != nil {
		return err
	}
	return check("hipMemcpy", memcpyDtoH(unsafe.Pointer(&dst[0]), buf, size))
}

// Close frees the device buffer and destroys the generator, on its device.
func (g *Generator) Close() error {
	return onDevice(g.ordinal, func() error {
		err := g.buf.Release()
		if derr := randCheck("hiprandDestroyGenerator", C.gpuinit_hiprandDestroy(g.gen)); err == nil {
			err = derr
		}
		return err
	})
}

func randCheck(op string, s C.hiprandStatus_t) error {
	if s == C.HIPRAND_STATUS_SUCCESS {
		return nil
	}
	return drivercodes.HIPRAND.Error(op, int(s), "", "")
}
