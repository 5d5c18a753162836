//go:build !nohip && (!linux || !cgo)

package hip

import (
	"runtime"

	"github.com/gpuinit/gpuinit/device/driver"
)

// open is nil where the backend cannot be built; unavailable says why.
var open func() (driver.Backend, error)

var unavailable = func() string {
	if runtime.GOOS != "linux" {
		return "the hip backend loads libamdhip64 at run time on Linux only"
	}
	return "this binary was built without cgo (CGO_ENABLED=0, which cross builds set silently): " +
		"build on Linux with CGO_ENABLED=1 and a C compiler for the target"
}()
