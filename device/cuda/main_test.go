//go:build linux && cgo && !nocuda

package cuda

import (
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/internal/childtest"
)

// This test binary serves the preflight for the cuda backend, as a server
// that imports device/backends does: its preflight children are itself.
// It is in a file of its own so that every build of the tests has it,
// the cudalink leg's too: the fake libraries are built once per binary.
func TestMain(m *testing.M) {
	device.ServePreflight()
	childtest.Main(m) // removes the fake libraries, built once for every test
}
