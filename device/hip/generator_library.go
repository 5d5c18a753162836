//go:build linux && cgo && !nohip

package hip

/*
#include "generator_shim.h"

struct gpuinit_hiprand gpuinit_hiprand;
*/
import "C"

import (
	"path/filepath"
	"unsafe"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/loader"
)

// hiprandLibrary is where libhiprand is looked for: first in the directory of
// the libamdhip64 that Init chose, so that their ROCm majors match, then
// through the loader's search, or the file GPUINIT_HIPRAND_LIBRARY names.
func hiprandLibrary() loader.Spec {
	var prefer []string
	if lib := state.lib.Load(); lib != nil {
		prefer = []string{filepath.Dir(lib.Path)}
	}
	return loader.Spec{
		Backend:  "hip",
		Names:    []string{"libhiprand.so.1"},
		Prefer:   prefer,
		Env:      EnvHiprandLibrary,
		Identity: "hiprandCreateGenerator",
		Hint:     "install hipRAND and rocRAND of the same ROCm as libamdhip64 (hiprand, rocrand; Debian's libhiprand1), or set " + EnvHiprandLibrary,
	}
}

// hiprandSymbols are the hipRAND functions generators call.
var hiprandSymbols = []loader.Symbol{
	{Name: "hiprandCreateGenerator", Offset: unsafe.Offsetof(C.gpuinit_hiprand.hiprandCreateGenerator), Required: true},
	{Name: "hiprandDestroyGenerator", Offset: unsafe.Offsetof(C.gpuinit_hiprand.hiprandDestroyGenerator), Required: true},
	{Name: "hiprandSetPseudoRandomGeneratorSeed", Offset: unsafe.Offsetof(C.gpuinit_hiprand.hiprandSetPseudoRandomGeneratorSeed), Required: true},
	{Name: "hiprandSetGeneratorOffset", Offset: unsafe.Offsetof(C.gpuinit_hiprand.hiprandSetGeneratorOffset), Required: true},
	{Name: "hiprandGenerate", Offset: unsafe.Offsetof(C.gpuinit_hiprand.hiprandGenerate), Required: true},
}

// loadHiprandOnce loads libhiprand at the first generator, once per process.
// A failure wraps driver.ErrNotSupported: without hipRAND there are no device
// generators, but the device is usable.
var loadHiprandOnce = loader.OnceFunc(func() error {
	spec := hiprandLibrary()
	lib, err := loader.Load(spec)
	if err == nil {
		err = lib.Bind(spec, hiprandSymbols, unsafe.Pointer(&C.gpuinit_hiprand), unsafe.Sizeof(C.gpuinit_hiprand), "install a hipRAND of ROCm 5 or later")
	}
	if err != nil {
		return drivercodes.Unusable("hip", "device generators need hipRAND (libhiprand.so.1)", err, driver.ErrNotSupported)
	}
	return nil
})
