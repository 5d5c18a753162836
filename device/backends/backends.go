// Package backends links every backend this build can have into the binary: sim
// always, cuda with -tags cuda, hip with -tags hip. Import it for its side
// effect, as database/sql drivers are imported:
//
//	import _ "github.com/gpuinit/gpuinit/device/backends"
package backends

import (
	_ "github.com/gpuinit/gpuinit/device/cuda" // with -tags cuda
	_ "github.com/gpuinit/gpuinit/device/hip"  // with -tags hip
	_ "github.com/gpuinit/gpuinit/device/sim"  // always: pure Go
)
