//go:build linux && cgo && !nocuda

package cuda

/*
#include "generator_shim.h"

struct gpuinit_curand gpuinit_rand;
*/
import "C"

import (
	"unsafe"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/loader"
)

// curandLibrary is where libcurand is looked for: the loader's search, or the
// file GPUINIT_CURAND_LIBRARY names. GPU hosts with PyTorch wheels often have
// it only inside the nvidia-curand package's lib/ folder: name it there.
func curandLibrary() loader.Spec {
	return loader.Spec{
		Backend:  "cuda",
		Names:    []string{"libcurand.so.10"},
		Env:      EnvCurandLibrary,
		Identity: "curandCreateGenerator",
		Hint: "install cuRAND (libcurand10, or the CUDA toolkit), or set " + EnvCurandLibrary +
			" to a libcurand.so.10, such as the one in the nvidia-curand Python wheel's lib/ folder",
	}
}

// curandSymbols are the cuRAND functions generators call.
var curandSymbols = []loader.Symbol{
	{Name: "curandCreateGenerator", Offset: unsafe.Offsetof(C.gpuinit_rand.curandCreateGenerator), Required: true},
	{Name: "curandCreateGeneratorHost", Offset: unsafe.Offsetof(C.gpuinit_rand.curandCreateGeneratorHost), Required: true},
	{Name: "curandDestroyGenerator", Offset: unsafe.Offsetof(C.gpuinit_rand.curandDestroyGenerator), Required: true},
	{Name: "curandSetPseudoRandomGeneratorSeed", Offset: unsafe.Offsetof(C.gpuinit_rand.curandSetPseudoRandomGeneratorSeed), Required: true},
	{Name: "curandSetGeneratorOffset", Offset: unsafe.Offsetof(C.gpuinit_rand.curandSetGeneratorOffset), Required: true},
	{Name: "curandGenerate", Offset: unsafe.Offsetof(C.gpuinit_rand.curandGenerate), Required: true},
}

// loadCurand loads libcurand and binds it. A failure wraps
// driver.ErrNotSupported: without cuRAND there are no device generators, but
// the device is usable.
func loadCurand() error {
	spec := curandLibrary()
	lib, err := loader.Load(spec)
	if err == nil {
		err = lib.Bind(spec, curandSymbols, unsafe.Pointer(&C.gpuinit_rand), unsafe.Sizeof(C.gpuinit_rand), "install a cuRAND of CUDA 10 or later")
	}
	if err != nil {
		return drivercodes.Unusable("cuda", "device generators need cuRAND (libcurand.so.10)", err, driver.ErrNotSupported)
	}
	return nil
}
