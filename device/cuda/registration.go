package cuda

import (
	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/host"
	"github.com/gpuinit/gpuinit/device/internal/loader"
)

// Environment variables naming files to load instead of searching, for odd
// installs and for tests.
const (
	EnvLibrary       = "GPUINIT_CUDA_LIBRARY"
	EnvCurandLibrary = "GPUINIT_CURAND_LIBRARY"
	EnvNVMLLibrary   = "GPUINIT_NVML_LIBRARY"
)

func init() { device.Register(Registration()) }

// Registration is what the package registers with device.DefaultRegistry when
// it is imported: the GPU backend "cuda", auto's first choice, whose
// generators draw in cuRAND's ordering and whose codes classify by CUDA's
// table before the driver is loaded. In a build that cannot have the backend
// (no cgo, not Linux, -tags nocuda) it has no Open and says why. A test
// registers it with a device.Registry of its own.
func Registration() driver.Registration {
	return driver.Registration{
		Name:        "cuda",
		Open:        open,
		Unavailable: unavailable,
		GPU:         true,
		AutoRank:    10,
		Ordering:    driver.OrderingCURAND,
		Visibility:  driver.VisibilityCUDA,
		Present:     func() (bool, string) { return host.ReadNVModule().Present() },
		Env: []driver.EnvVar{
			{Name: EnvLibrary, Doc: "the libcuda.so.1 to load: a path, or a name for the loader to find",
				Default: "libcuda.so.1 on the loader's path, then /usr/lib/wsl/lib",
				Check:   loader.CheckFile(EnvLibrary, "libcuda.so.1")},
			{Name: EnvCurandLibrary, Doc: "the libcurand.so.10 the generators load (the nvidia-curand wheel's lib/ has one)",
				Default: "libcurand.so.10 on the loader's path",
				Check:   loader.CheckFile(EnvCurandLibrary, "libcurand.so.10")},
			{Name: EnvNVMLLibrary, Doc: "the libnvidia-ml.so.1 the health watch and the device details load",
				Default: "libnvidia-ml.so.1 on the loader's path, then /usr/lib/wsl/lib",
				Check:   loader.CheckFile(EnvNVMLLibrary, "libnvidia-ml.so.1")},
		},
		Classify: classify,
	}
}

// classify is CUDA's code table; the loaded driver's own names are added by
// Backend.DriverError.
func classify(op string, code int) *driver.DriverError {
	return drivercodes.CUDA.Error(op, code, "", "")
}
