package drivercodes

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/stretchr/testify/assert"
)

func TestHidingSettingsAreNamedInTheNoDeviceHint(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		hides       bool
	}{
		{"CUDA_VISIBLE_DEVICES", "", true},
		{"CUDA_VISIBLE_DEVICES", "-1", true},
		{"NVIDIA_VISIBLE_DEVICES", "void", true},
		{"NVIDIA_VISIBLE_DEVICES", "none", true},
		{"CUDA_VISIBLE_DEVICES", "NoDevFiles", true},
		{"CUDA_VISIBLE_DEVICES", "0,1", false},
		{"NVIDIA_VISIBLE_DEVICES", "all", false},
	} {
		t.Run(fmt.Sprintf("%s=%q", tc.name, tc.value), func(t *testing.T) {
			for _, v := range CUDAHiding {
				unsetenv(t, v)
			}
			t.Setenv(tc.name, tc.value)
			err := WithVisibilityHint(CUDA.Error("cuInit", 100, "", ""), CUDAHiding)
			var de *driver.DriverError
			assert.True(t, errors.As(err, &de))
			assert.Equal(t, tc.hides, len(Hiding(CUDAHiding)) > 0)
			if tc.hides {
				assert.Contains(t, de.Hint, fmt.Sprintf("%s=%q hides every device", tc.name, tc.value))
			} else {
				assert.NotContains(t, de.Hint, "hides every device")
			}
		})
	}
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
	for _, v := range append(CUDAHiding, HIPHiding...) {
		unsetenv(t, v)
	}
	assert.Empty(t, Hiding(CUDAHiding))
	assert.Empty(t, Hiding(HIPHiding))
}
