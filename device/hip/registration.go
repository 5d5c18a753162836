package hip

import (
	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/kfd"
)

// Environment variables naming files to load instead of searching, for odd
// installs and for tests.
const (
	EnvLibrary        = "GPUINIT_HIP_LIBRARY"
	EnvHiprandLibrary = "GPUINIT_HIPRAND_LIBRARY"
)

func init() { device.Register(Registration()) }

// Registration is what the package registers with device.DefaultRegistry when
// it is imported: the GPU backend "hip", which auto tries after cuda, whose
// generators draw in rocRAND's sequential ordering and whose codes classify
// by HIP's table before the runtime is loaded. In a build that cannot have
// the backend (no cgo, not Linux, -tags nohip) it has no Open and says why. A test
// registers it with a device.Registry of its own.
func Registration() driver.Registration {
	return driver.Registration{
		Name:        "hip",
		Open:        open,
		Unavailable: unavailable,
		GPU:         true,
		AutoRank:    20,
		Ordering:    driver.OrderingSequential,
		Visibility:  driver.VisibilityROCm,
		Present:     kfd.Present,
		Classify:    classify,
	}
}

// classify is CUDA's code table; the loaded driver's own names are added by
// Backend.DriverError.
func classify(op string, code int) *driver.DriverError {
	return drivercodes.CUDA.Error(op, code, "", "")
}
