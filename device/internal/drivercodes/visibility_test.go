package drivercodes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/host"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHidingSettingsAreNamedInTheNoDeviceHint: a variable that leaves the
// runtime no device, as that runtime reads it, is named in the no-device
// error's hint with why; one that may leave it a device is not.
func TestHidingSettingsAreNamedInTheNoDeviceHint(t *testing.T) {
	const mig = "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f"
	for _, tc := range []struct {
		family      Family
		name, value string
		nodes       int // /dev/nvidiaN nodes
		hides       bool
		why         string // a part of the hint's reason, where it hides
	}{
		{CUDAHiding, "CUDA_VISIBLE_DEVICES", "", 1, true, "empty"},
		{CUDAHiding, "CUDA_VISIBLE_DEVICES", "-1", 1, true, "negative"},
		{CUDAHiding, "CUDA_VISIBLE_DEVICES", "-2", 1, true, "negative"},
		{CUDAHiding, "CUDA_VISIBLE_DEVICES", "0,0", 1, true, `entry 2 "0" repeats entry 1`},
		{CUDAHiding, "CUDA_VISIBLE_DEVICES", "gpu0", 1, true, "not a number"},
		{CUDAHiding, "CUDA_VISIBLE_DEVICES", "NoDevFiles", 1, true, "not a number"},
		{CUDAHiding, "CUDA_VISIBLE_DEVICES", "GPU-", 2, true, "ambiguous"},
		{CUDAHiding, "CUDA_VISIBLE_DEVICES", "GPU-", 1, false, ""},
		{CUDAHiding, "CUDA_VISIBLE_DEVICES", "MIG-unknown", 1, true, "no device's UUID"},
		{CUDAHiding, "CUDA_VISIBLE_DEVICES", mig, 1, false, ""},
		{CUDAHiding, "NVIDIA_VISIBLE_DEVICES", "void", 1, true, "toolkit passed no GPU"},
		{CUDAHiding, "NVIDIA_VISIBLE_DEVICES", "none", 1, true, "toolkit passed no GPU"},
		{CUDAHiding, "CUDA_VISIBLE_DEVICES", "0,1", 1, false, ""},
		{CUDAHiding, "NVIDIA_VISIBLE_DEVICES", "all", 1, false, ""},
		{CUDAHiding, "NVIDIA_VISIBLE_DEVICES", "GPU-8932f937", 1, false, "the toolkit's list: what it passed in is there"},
		{HIPHiding, "HIP_VISIBLE_DEVICES", "-2", 0, true, "not a plain decimal"},
		{HIPHiding, "HIP_VISIBLE_DEVICES", "gpu0", 0, true, "not a plain decimal"},
		{HIPHiding, "HIP_VISIBLE_DEVICES", "GPU-zz", 0, true, "no device's UUID"},
		{HIPHiding, "HIP_VISIBLE_DEVICES", "0,0", 0, false, "HIP skips a repeat"},
		{HIPHiding, "ROCR_VISIBLE_DEVICES", "GPU-", 0, true, "5 to 20"},
		{HIPHiding, "ROCR_VISIBLE_DEVICES", ",0", 0, true, "hsa_init fails"},
		{HIPHiding, "ROCR_VISIBLE_DEVICES", "0,0", 0, false, "ROCr ends the list at the repeat"},
		{HIPHiding, "CUDA_VISIBLE_DEVICES", "-2", 0, true, "not a plain decimal"},
		{HIPHiding, "CUDA_VISIBLE_DEVICES", "0,0", 0, false, "as HIP reads it, a repeat is skipped"},
		{HIPHiding, "GPU_DEVICE_ORDINAL", "-1", 0, false, "ROCclr reads it for OpenCL only"},
	} {
		t.Run(fmt.Sprintf("%s=%q, %d nodes", tc.name, tc.value, tc.nodes), func(t *testing.T) {
			clearVisibility(t)
			nodes(t, tc.nodes)
			t.Setenv(tc.name, tc.value)
			err := WithVisibilityHint(CUDA.Error("cuInit", 100, "", ""), tc.family)
			var de *driver.DriverError
			require.True(t, errors.As(err, &de))
			assert.Equal(t, tc.hides, len(Hiding(tc.family)) > 0, "%v", Hiding(tc.family))
			if tc.hides {
				assert.Equal(t, []string{fmt.Sprintf("%s=%q", tc.name, tc.value)}, HidingFor(tc.family.Visibility))
				assert.Contains(t, de.Hint, fmt.Sprintf("%s=%q hides every device (", tc.name, tc.value))
				assert.Contains(t, de.Hint, tc.why)
			} else {
				assert.NotContains(t, de.Hint, "hides every device")
			}
		})
	}
}

func TestHIPReadsCUDAVisibleDevicesOnlyWhereHIPVisibleDevicesIsUnset(t *testing.T) {
	clearVisibility(t)
	t.Setenv("CUDA_VISIBLE_DEVICES", "-1")
	assert.Equal(t, []string{`CUDA_VISIBLE_DEVICES="-1"`}, Hiding(HIPHiding))
	t.Setenv("HIP_VISIBLE_DEVICES", "0")
	assert.Empty(t, Hiding(HIPHiding), "HIP_VISIBLE_DEVICES chooses")
	assert.Equal(t, []string{`CUDA_VISIBLE_DEVICES="-1"`}, Hiding(CUDAHiding), "CUDA reads its own")
}

// clearVisibility unsets every family's variables for the rest of the test.
func clearVisibility(t *testing.T) {
	t.Helper()
	for _, v := range append(append([]string{"GPU_DEVICE_ORDINAL"}, CUDAHiding.Vars...), HIPHiding.Vars...) {
		unsetenv(t, v)
	}
}

// nodes points host.Dev at a /dev with n GPU device nodes.
func nodes(t *testing.T, n int) {
	t.Helper()
	dev := t.TempDir()
	for i := range n {
		require.NoError(t, os.WriteFile(filepath.Join(dev, fmt.Sprintf("nvidia%d", i)), nil, 0o644))
	}
	t.Setenv(host.EnvDevRoot, dev)
}

// unsetenv unsets name for the rest of the test; t.Setenv restores it after.
func unsetenv(t *testing.T, name string) {
	t.Helper()
	t.Setenv(name, "")
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}

func TestOrderingVariablesHideNothing(t *testing.T) {
	t.Setenv("CUDA_DEVICE_ORDER", "")
	t.Setenv("HSA_OVERRIDE_GFX_VERSION", "")
	clearVisibility(t)
	assert.Empty(t, Hiding(CUDAHiding))
	assert.Empty(t, Hiding(HIPHiding))
}
