//go:build cgo && !linux && !nohip

package hip

import "github.com/gpuinit/gpuinit/device"

func init() {
	device.RegisterUnavailable("hip", "the hip backend loads libamdhip64 at run time on Linux only")
}
