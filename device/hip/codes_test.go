package hip

import (
	"errors"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/stretchr/testify/assert"
)

func TestDriverCodesMapOntoSentinelsWithHints(t *testing.T) {
	for _, tc := range []struct {
		op   string
		code int
		want error
	}{
		{"hipInit", 100, device.ErrNoDevice},
		{"hipInit", 101, device.ErrNoDevice},
		{"hipSetDevice", 101, device.ErrInvalidDevice},
		{"hipInit", 35, device.ErrDriverMismatch},
		{"hipInit", 999, nil},
	} {
		err := driverError(tc.op, tc.code, "", "")
		assert.NotEmpty(t, err.Hint, "%s %d", tc.op, tc.code)
		for _, s := range []error{device.ErrNoDevice, device.ErrDriverMismatch, device.ErrInvalidDevice} {
			assert.Equal(t, s == tc.want, errors.Is(err, s), "%s %d: errors.Is(%v)", tc.op, tc.code, s)
		}
	}
	assert.Contains(t, driverError("hipInit", 100, "", "").Error(), "--device=/dev/kfd")
	assert.Equal(t, "HIPRAND_STATUS_LAUNCH_FAILURE", hiprandCodes.Error("hiprandGenerate", 201, "", "").Name)
}
