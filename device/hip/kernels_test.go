package hip_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/hip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKernelsCoverTheDevicesEffectiveTarget(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"TensileLibrary_lazy_gfx90a.dat", "TensileLibrary_lazy_gfx1100.dat"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o644))
	}
	for _, tc := range []struct {
		arch    string
		covered bool
	}{{"gfx90a", true}, {"gfx1100", true}, {"gfx1030", false}, {"gfx942", false}} {
		covered, found, err := hip.KernelsCover(dir, device.Info{Arch: tc.arch})
		require.NoError(t, err, tc.arch)
		assert.Equal(t, tc.covered, covered, tc.arch)
		assert.Equal(t, []string{"gfx1100", "gfx90a"}, found)
	}
	_, _, err := hip.KernelsCover(dir, device.Info{Ordinal: 1, Arch: "sm_90"})
	assert.ErrorContains(t, err, "device 1 (sm_90) has no gfx target")
}
