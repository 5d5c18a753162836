// Package backends links every backend this module ships into the binary, as
// database/sql drivers are linked, by importing it for its side effect:
//
//	import _ "github.com/gpuinit/gpuinit/device/backends"
//
// sim is always there. cuda and hip are compiled in on Linux with cgo, with no
// SDK needed: they load their vendor libraries at run time, at the first Init,
// so the binary starts on CPU-only, NVIDIA and AMD hosts alike. Leave one out
// with -tags nocuda or -tags nohip. Where the build cannot have them (no cgo,
// as in cross builds, or another OS) they register as unavailable with the
// reason, which Open and auto report.
//
// Importing it also makes the binary serve the preflight (device.Preflight):
// started as a preflight child, a process that imports this package checks
// the backend it was asked about and exits during package initialization,
// before main runs, so that a server needs no code of its own for it.
package backends

import (
	"github.com/gpuinit/gpuinit/device"
	_ "github.com/gpuinit/gpuinit/device/cuda" // Linux with cgo; unless -tags nocuda
	_ "github.com/gpuinit/gpuinit/device/hip"  // Linux with cgo; unless -tags nohip
	_ "github.com/gpuinit/gpuinit/device/sim"  // always: pure Go
)

// The backends above have registered by now: their packages' inits run
// before this one's.
func init() { device.ServePreflight() }
