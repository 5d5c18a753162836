package hip

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/internal/host"
	"github.com/gpuinit/gpuinit/device/internal/loader"
)

// EnvRASPeriod sets how often the health watch reads amdgpu's RAS counters,
// as a Go duration ("10s", the default). A value that is not a positive
// duration leaves the devices' health unknown, with the variable named.
const EnvRASPeriod = "GPUINIT_RAS_PERIOD"

const defaultRASPeriod = 10 * time.Second

// Environment variables naming files to load instead of searching, for odd
// installs and for tests.
const (
	EnvLibrary        = "GPUINIT_HIP_LIBRARY"
	EnvHiprandLibrary = "GPUINIT_HIPRAND_LIBRARY"
	// EnvSMILibrary names ROCm SMI's librocm_smi64, which the health watch
	// loads for the devices' event notifications.
	EnvSMILibrary = "GPUINIT_ROCM_SMI_LIBRARY"
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
		Present:     host.KFDPresent,
		Env: []driver.EnvVar{
			{Name: EnvLibrary, Doc: "the libamdhip64 to load: a path, or a name for the loader to find",
				Default: "libamdhip64.so.7, .6, .5, then .so, on the loader's path, in $ROCM_PATH/lib, /opt/rocm/lib, /usr/lib/wsl/lib",
				Check:   loader.CheckFile(EnvLibrary, "libamdhip64.so")},
			{Name: EnvHiprandLibrary, Doc: "the libhiprand.so.1 the generators load",
				Default: "libhiprand.so.1 beside the libamdhip64 loaded, then on the loader's path",
				Check:   loader.CheckFile(EnvHiprandLibrary, "libhiprand.so.1")},
			{Name: EnvSMILibrary, Doc: "the librocm_smi64 the health watch loads for the devices' events",
				Default: "librocm_smi64.so.7, .6, .5, .1, then .so, on the loader's path, in $ROCM_PATH/lib, /opt/rocm/lib",
				Check:   loader.CheckFile(EnvSMILibrary, "librocm_smi64.so.7")},
			{Name: EnvRASPeriod, Doc: "how often the health watch reads amdgpu's RAS error counters, a positive Go duration",
				Default: "10s", Check: func(string) error { _, err := rasPeriod(); return err }},
		},
		Classify: classify,
	}
}

// classify is CUDA's code table; the loaded driver's own names are added by
// Backend.DriverError.
func classify(op string, code int) *driver.DriverError {
	return drivercodes.CUDA.Error(op, code, "", "")
}

// rasPeriod is GPUINIT_RAS_PERIOD, or the default.
func rasPeriod() (time.Duration, error) {
	v := strings.TrimSpace(os.Getenv(EnvRASPeriod))
	if v == "" {
		return defaultRASPeriod, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("hip: %s=%q is not a positive duration such as 10s: %w", EnvRASPeriod, v, driver.ErrBadSetting)
	}
	return d, nil
}
