package device_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDriverFloorHoldsForEveryRuntime: a backend initializes once per
// process, so the floor a later Runtime sets never reaches a backend's Init;
// the Runtime checks it after Init itself.
func TestDriverFloorHoldsForEveryRuntime(t *testing.T) {
	for _, tc := range []struct {
		name      string
		floor     int
		firstInit bool // another Runtime initialized the shared backend first
		wantErr   bool
	}{
		{"a floor above the driver fails Init", sim.DriverVersion + 1, false, true},
		{"a floor above the driver fails a second runtime's Init", sim.DriverVersion + 1, true, true},
		{"a floor the driver meets passes", sim.DriverVersion, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := sim.New()
			if tc.firstInit {
				require.NoError(t, device.New(b).Init(context.Background()))
			}
			r := device.New(b)
			require.NoError(t, r.RequireDriverVersion("sim", tc.floor))
			err := r.Init(context.Background())
			if !tc.wantErr {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, device.ErrDriverMismatch)
			assert.ErrorContains(t, err, fmt.Sprintf("the driver reports %d, this runtime requires %d", sim.DriverVersion, tc.floor))
			assert.ErrorIs(t, r.Stats().Err, device.ErrDriverMismatch, "the failure is memoized")
		})
	}
}
