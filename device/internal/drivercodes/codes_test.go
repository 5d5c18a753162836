package drivercodes

import (
	"errors"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/stretchr/testify/assert"
)

func TestCodesMapOntoSentinelsWithHints(t *testing.T) {
	for _, tc := range []struct {
		table  *driver.CodeTable
		op     string
		code   int
		name   string
		want   error
		sticky bool
	}{
		{CUDA, "cuInit", 100, "CUDA_ERROR_NO_DEVICE", driver.ErrNoDevice, false},
		{CUDA, "cuInit", 999, "CUDA_ERROR_UNKNOWN", nil, false},
		{CUDA, "cuInit", 35, "CUDA_ERROR_INSUFFICIENT_DRIVER", driver.ErrDriverMismatch, false},
		{CUDA, "cuInit", 802, "CUDA_ERROR_SYSTEM_NOT_READY", driver.ErrNoDevice, false},
		{CUDA, "cuInit", 803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", driver.ErrDriverMismatch, false},
		{CUDA, "cuInit", 804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", driver.ErrDriverMismatch, false},
		{CUDA, "cuInit", 800, "CUDA_ERROR_NOT_PERMITTED", nil, false},
		{CUDA, "cuInit", 34, "CUDA_ERROR_STUB_LIBRARY", driver.ErrDriverNotFound, false},
		{CUDA, "cuCtxSynchronize", 700, "CUDA_ERROR_ILLEGAL_ADDRESS", nil, true},
		{CUDA, "cuCtxSynchronize", 719, "CUDA_ERROR_LAUNCH_FAILED", nil, true},
		{CUDA, "cuCtxSynchronize", 214, "CUDA_ERROR_ECC_UNCORRECTABLE", nil, true},
		{HIP, "hipInit", 100, "hipErrorNoDevice", driver.ErrNoDevice, false},
		{HIP, "hipSetDevice", 101, "hipErrorInvalidDevice", driver.ErrInvalidDevice, false},
		{HIP, "hipInit", 35, "hipErrorInsufficientDriver", driver.ErrDriverMismatch, false},
		{HIP, "hipDeviceSynchronize", 700, "hipErrorIllegalAddress", nil, true},
		{HIP, "hipDeviceSynchronize", 719, "hipErrorLaunchFailure", nil, true},
		{HIP, "hipDeviceSynchronize", 214, "hipErrorECCNotCorrectable", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.table.Error(tc.op, tc.code, "", "")
			assert.Equal(t, tc.name, err.Name)
			assert.NotEmpty(t, err.Hint)
			assert.Contains(t, err.Error(), tc.name)
			assert.Equal(t, tc.sticky, err.Sticky)
			for _, s := range []error{driver.ErrNoDevice, driver.ErrDriverMismatch, driver.ErrDriverNotFound, driver.ErrInvalidDevice} {
				assert.Equal(t, s == tc.want, errors.Is(err, s), "errors.Is(%v)", s)
			}
		})
	}
	assert.Equal(t, "CUresult", CUDA.Error("cuX", 12345, "", "").Name)
	assert.Equal(t, "CURAND_STATUS_OUT_OF_RANGE", CURAND.Error("curandCreateGeneratorHost", 104, "", "").Name)
	assert.ErrorIs(t, CURAND.Error("curandCreateGenerator", 203, "", ""), driver.ErrNoDevice)
	assert.Equal(t, "HIPRAND_STATUS_LAUNCH_FAILURE", HIPRAND.Error("hiprandGenerate", 201, "", "").Name)
}

func TestHIPInitAnswering101MeansNoDevice(t *testing.T) {
	for _, code := range []int{100, 101} {
		err := HIPError("hipInit", code, "", "")
		assert.ErrorIs(t, err, driver.ErrNoDevice, "hipInit %d", code)
		assert.Contains(t, err.Error(), "--device=/dev/kfd")
	}
	assert.ErrorIs(t, HIPError("hipSetDevice", 101, "", ""), driver.ErrInvalidDevice, "101 elsewhere is a bad ordinal")
}
