//go:build linux && cgo && !nocuda && !cudalink

package cuda

/*
#include "dl.h"
#include "curand_shim.h"

struct gpuinit_curand gpuinit_rand;

#define SYM(f) { #f, offsetof(struct gpuinit_curand, f), 1 }
const struct gpuinit_symbol gpuinit_curand_symbols[] = {
	SYM(curandCreateGenerator), SYM(curandCreateGeneratorHost), SYM(curandDestroyGenerator),
	SYM(curandSetPseudoRandomGeneratorSeed), SYM(curandSetGeneratorOffset), SYM(curandGenerate),
};
#undef SYM

*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/internal/dynload"
)

// curandLibrary is where libcurand is looked for: the loader's search, or the
// file GPUINIT_CURAND_LIBRARY names. GPU hosts with PyTorch wheels often have
// it only inside the nvidia-curand package's lib/ folder: name it there.
func curandLibrary() dynload.Spec {
	return dynload.Spec{
		Backend: "cuda",
		Names:   []string{"libcurand.so.10"},
		Env:     EnvCurandLibrary,
		Hint: "install cuRAND (libcurand10, or the CUDA toolkit), or set " + EnvCurandLibrary +
			" to a libcurand.so.10, such as the one in the nvidia-curand Python wheel's lib/ folder",
	}
}

// loadCurand loads libcurand and binds it. A failure wraps
// device.ErrNotSupported: without cuRAND there are no device generators, but
// the device is usable.
func loadCurand() error {
	_, err := load(curandLibrary(), &C.gpuinit_curand_symbols[0], len(C.gpuinit_curand_symbols),
		unsafe.Pointer(&C.gpuinit_rand), unsafe.Sizeof(C.gpuinit_rand), "install a cuRAND of CUDA 10 or later")
	if err != nil {
		return fmt.Errorf("%w: cuda: device generators need cuRAND (libcurand.so.10): %w", device.ErrNotSupported, err)
	}
	return nil
}
