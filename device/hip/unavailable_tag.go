//go:build nohip

package hip

import "github.com/gpuinit/gpuinit/device/driver"

// open is nil in a -tags nohip build; unavailable says why.
var open func() (driver.Backend, error)

const unavailable = "this binary was built with -tags nohip"
