//go:build nocuda

package cuda

import "github.com/gpuinit/gpuinit/device/driver"

// open is nil in a -tags nocuda build; unavailable says why.
var open func() (driver.Backend, error)

const unavailable = "this binary was built with -tags nocuda"
