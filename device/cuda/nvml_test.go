//go:build linux && cgo && !nocuda

package cuda

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/loader"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRealNVML binds whatever libnvidia-ml the loader finds: in CI's cuda
// leg, Debian's 535, whose nvmlInit_v2 fails without a GPU. Every required
// symbol binds; an optional one a driver lacks (the recovery action's field
// API is R570's) is listed, and its signals stay unknown.
func TestRealNVML(t *testing.T) {
	t.Parallel() // its child has files of its own
	out, skipped := startChild(t, "TestChildRealNVML", EnvNVMLLibrary+"=")
	if skipped {
		t.Skipf("no libnvidia-ml here:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "real NVML") || strings.HasPrefix(line, "nvmlInit_v2") {
			t.Log(line)
		}
	}
}

func TestChildRealNVML(t *testing.T) {
	child(t)
	lib, err := loader.Load(nvmlLibrary())
	if errors.Is(err, driver.ErrDriverNotFound) {
		t.Skip("no libnvidia-ml.so.1 on this machine:", err)
	}
	require.NoError(t, err)
	var missing []string
	for _, s := range nvmlSymbols {
		if lib.Symbol(s.Name) == nil {
			assert.False(t, s.Required, "%s is required", s.Name)
			missing = append(missing, s.Name)
		}
	}
	fmt.Printf("real NVML %s: %d of %d symbols bound; missing: %v\n", lib.Path, len(nvmlSymbols)-len(missing), len(nvmlSymbols), missing)
	err = initNVML()
	fmt.Printf("nvmlInit_v2: %v\n", err)
	if err != nil {
		var de *driver.DriverError
		require.ErrorAs(t, err, &de, "a failed init is the driver's answer, named")
		assert.Equal(t, "nvmlInit_v2", de.Op)
		assert.NotEmpty(t, de.Name)
	}
}
