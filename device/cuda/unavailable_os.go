//go:build cgo && !linux && !nocuda

package cuda

import "github.com/gpuinit/gpuinit/device"

func init() {
	device.RegisterUnavailable("cuda", "the cuda backend loads libcuda at run time on Linux only")
}
