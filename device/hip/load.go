//go:build linux && cgo && !nohip

package hip

import (
	"os"

	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/dynload"
)

// runtimeLibrary is where libamdhip64 is looked for: every ROCm major's
// soname, newest first, then the unversioned name, through the loader's
// search, then ROCm's usual homes and WSL2's driver directory.
func runtimeLibrary() dynload.Spec {
	return dynload.Spec{
		Backend: "hip",
		Names:   []string{"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"},
		Dirs:    dynload.Dirs([]string{os.Getenv("ROCM_PATH")}, "lib", "/opt/rocm/lib", "/usr/lib/wsl/lib"),
		Env:     EnvLibrary,
		Hint:    drivercodes.HIPNotFoundHint,
	}
}
