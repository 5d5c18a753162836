//go:build linux && cgo && !nocuda && !cudalink

package cuda

import (
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/dynload"
)

// driverLibrary is where libcuda is looked for. Only libcuda.so.1: the bare
// libcuda.so is, in build images, the toolkit's link stub, which answers
// CUDA_ERROR_STUB_LIBRARY to every call. WSL2 keeps the driver in
// /usr/lib/wsl/lib.
func driverLibrary() dynload.Spec {
	return dynload.Spec{
		Backend: "cuda",
		Names:   []string{"libcuda.so.1"},
		Dirs:    []string{"/usr/lib/wsl/lib"},
		Env:     EnvLibrary,
		Hint:    drivercodes.CUDANotFoundHint,
	}
}

// linked reports a -tags cudalink build, where the libraries are linked
// rather than loaded.
const linked = false
