//go:build linux && cgo && !nocuda

package cuda

import (
	"testing"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/stretchr/testify/assert"
)

// TestRuntimeVersionIsTheToolkitBuiltAgainst: with -tags cudalink, the
// backend reports the CUDA_VERSION of the cuda.h it was compiled with; loaded
// at run time it has none, and says nothing.
func TestRuntimeVersionIsTheToolkitBuiltAgainst(t *testing.T) {
	rv, ok := driver.Capability[driver.RuntimeVersioner](process)
	if !linked {
		assert.False(t, ok, "a run-time loaded backend has no toolkit version")
		return
	}
	if assert.True(t, ok) {
		v, err := rv.RuntimeVersion()
		assert.NoError(t, err)
		assert.GreaterOrEqual(t, v, 11000, "CUDA_VERSION of the SDK built against")
		t.Logf("built against CUDA_VERSION %d", v)
	}
}
