//go:build !cgo && !nocuda

package cuda

import "github.com/gpuinit/gpuinit/device"

func init() {
	device.RegisterUnavailable("cuda", "this binary was built without cgo (CGO_ENABLED=0, which cross builds set silently): "+
		"build on Linux with CGO_ENABLED=1 and a C compiler for the target")
}
