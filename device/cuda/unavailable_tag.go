//go:build nocuda

package cuda

import "github.com/gpuinit/gpuinit/device"

func init() {
	device.RegisterUnavailable("cuda", "this binary was built with -tags nocuda")
}
