//go:build linux && cgo && !nohip

package hip

/*
#include "dl.h"
#include "hiprand_shim.h"

struct gpuinit_hiprand gpuinit_hiprand;

#define SYM(f) { #f, offsetof(struct gpuinit_hiprand, f), 1 }
const struct gpuinit_symbol gpuinit_hiprand_symbols[] = {
	SYM(hiprandCreateGenerator), SYM(hiprandDestroyGenerator), SYM(hiprandSetPseudoRandomGeneratorSeed),
	SYM(hiprandSetGeneratorOffset), SYM(hiprandGenerate),
};
#undef SYM

*/
import "C"

import (
	"fmt"
	"path/filepath"
	"sync"
	"unsafe"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/internal/drawbuf"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/dynload"
)

// hiprandLib is libhiprand, loaded at the first generator, once per process.
var hiprandLib struct {
	once sync.Once
	err  error
}

// loadHiprand loads libhiprand.so.1 from the directory of the libamdhip64 that
// Init chose first, so that their ROCm majors match, then through the
// loader's search. A failure wraps device.ErrNotSupported: without hipRAND
// there are no device generators, but the device is usable.
func loadHiprand() error {
	hiprandLib.once.Do(func() {
		spec := dynload.Spec{
			Backend: "hip",
			Names:   []string{"libhiprand.so.1"},
			Prefer:  []string{filepath.Dir(runtime.lib.Path)},
			Env:     EnvHiprandLibrary,
			Hint:    "install hipRAND and rocRAND of the same ROCm as libamdhip64 (hiprand, rocrand; Debian's libhiprand1), or set " + EnvHiprandLibrary,
		}
		_, err := load(spec, &C.gpuinit_hiprand_symbols[0], len(C.gpuinit_hiprand_symbols),
			unsafe.Pointer(&C.gpuinit_hiprand), unsafe.Sizeof(C.gpuinit_hiprand), "install a hipRAND of ROCm 5 or later")
		if err != nil {
			hiprandLib.err = fmt.Errorf("%w: hip: device generators need hipRAND (libhiprand.so.1): %w", device.ErrNotSupported, err)
		}
	})
	return hiprandLib.err
}

// NewGenerator creates a hipRAND Philox4x32-10 generator
// (hiprandCreateGenerator) for device ordinal. Its state lives on the host;
// Generate runs it on the device. libhiprand is loaded at the first call.
func (b *Backend) NewGenerator(ordinal int) (device.Generator, error) {
	if err := checkOrdinal("hiprandCreateGenerator", ordinal); err != nil {
		return nil, err
	}
	if err := loadHiprand(); err != nil {
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
	// buf is device memory for Generate, kept between calls (hipMalloc per
	// draw costs more than the draw) and grown as needed, up to
	// drawbuf.MaxValues; bufSize is its size in bytes, 0 before the first
	// Generate.
	buf     unsafe.Pointer
	bufSize int
}

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
		return drawbuf.InPieces(dst, g.generateOnDevice)
	})
}

// generateOnDevice draws len(dst) <= drawbuf.MaxValues values into the device
// buffer, growing it if needed, and copies them to dst. The device is
// current.
func (g *Generator) generateOnDevice(dst []uint32) error {
	size := 4 * len(dst)
	if size > g.bufSize {
		if err := g.freeBuffer(); err != nil {
			return err
		}
		buf, r := malloc(size)
		if err := check("hipMalloc", r); err != nil {
			return err
		}
		g.buf, g.bufSize = buf, size
	}
	if err := randCheck("hiprandGenerate", C.gpuinit_hiprandGenerate(g.gen, g.buf, C.size_t(len(dst)))); err != nil {
		return err
	}
	return check("hipMemcpy", memcpyDtoH(unsafe.Pointer(&dst[0]), g.buf, size))
}

// freeBuffer frees the device buffer, if any; the device is current.
func (g *Generator) freeBuffer() error {
	if g.bufSize == 0 {
		return nil
	}
	g.bufSize = 0
	return check("hipFree", free(g.buf))
}

// Close frees the device buffer and destroys the generator, on its device.
func (g *Generator) Close() error {
	return onDevice(g.ordinal, func() error {
		err := g.freeBuffer()
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
