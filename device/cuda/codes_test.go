package cuda

import (
	"errors"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/stretchr/testify/assert"
)

// The mapping is pure Go, so it is tested in every build, cuda tag or not.
func TestDriverCodesMapOntoSentinelsWithHints(t *testing.T) {
	for _, tc := range []struct {
		code int
		want error
		name string
	}{
		{100, device.ErrNoDevice, "CUDA_ERROR_NO_DEVICE"},
		{999, nil, "CUDA_ERROR_UNKNOWN"},
		{35, device.ErrDriverMismatch, "CUDA_ERROR_INSUFFICIENT_DRIVER"},
		{803, device.ErrDriverMismatch, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
		{804, device.ErrDriverMismatch, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
		{800, nil, "CUDA_ERROR_NOT_PERMITTED"},
		{34, device.ErrDriverNotFound, "CUDA_ERROR_STUB_LIBRARY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := driverCodes.Error("cuInit", tc.code, "", "")
			assert.Equal(t, tc.name, err.Name)
			assert.NotEmpty(t, err.Hint)
			assert.Contains(t, err.Error(), tc.name)
			for _, s := range []error{device.ErrNoDevice, device.ErrDriverMismatch, device.ErrDriverNotFound, device.ErrInvalidDevice} {
				assert.Equal(t, s == tc.want, errors.Is(err, s), "errors.Is(%v)", s)
			}
		})
	}
	assert.Equal(t, "CUresult", driverCodes.Error("cuX", 12345, "", "").Name)
	assert.Equal(t, "CURAND_STATUS_OUT_OF_RANGE", curandCodes.Error("curandCreateGeneratorHost", 104, "", "").Name)
	assert.ErrorIs(t, curandCodes.Error("curandCreateGenerator", 203, "", ""), device.ErrNoDevice)
}
