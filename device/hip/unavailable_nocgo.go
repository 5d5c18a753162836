//go:build !cgo && !nohip

package hip

import "github.com/gpuinit/gpuinit/device"

func init() {
	device.RegisterUnavailable("hip", "this binary was built without cgo (CGO_ENABLED=0, which cross builds set silently): "+
		"build on Linux with CGO_ENABLED=1 and a C compiler for the target")
}
