//go:build nohip

package hip

import "github.com/gpuinit/gpuinit/device"

func init() {
	device.RegisterUnavailable("hip", "this binary was built with -tags nohip")
}
