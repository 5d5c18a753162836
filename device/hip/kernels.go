package hip

import (
	"fmt"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/host"
)

// KernelsCover reports whether a directory of ROCm kernels a server ships
// (rocBLAS's library/, whose TensileLibrary_*gfx* files name the targets it
// was built for) covers an AMD device, as rocBLAS looks them up: the
// device's effective target (info.Arch, after any override), in dir/<target>/
// or dir, or the generic target of its family (gfx11-generic). found lists
// every target the directory's files name. An info that is no AMD device,
// or a directory that cannot be read, is an error naming it. Unlike ollama's
// check it finds the per-target subdirectories of multi-target builds.
func KernelsCover(dir string, info driver.Info) (covered bool, found []string, err error) {
	target, err := host.ParseGfxTarget(info.Arch)
	if err != nil {
		return false, nil, fmt.Errorf("hip: KernelsCover: device %d (%s) has no gfx target: %w", info.Ordinal, info.Arch, err)
	}
	return host.KernelsCover(dir, target)
}
