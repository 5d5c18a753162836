package drivercodes

import (
	"errors"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/stretchr/testify/assert"
)

// TestAnUnusableFeatureSaysTheBackendOnce: a backend's feature that a
// library's failure makes unusable says the backend's prefix once, context
// first and the sentinel last, and matches both the cause and the sentinel.
func TestAnUnusableFeatureSaysTheBackendOnce(t *testing.T) {
	missing := &driver.DriverError{Backend: "cuda", Op: "dlopen", Message: "libcurand.so.10: cannot open shared object file",
		Sentinel: driver.ErrDriverNotFound}
	other := errors.New("hostmem: /proc/meminfo has no MemAvailable")
	for _, tc := range []struct {
		name    string
		context string
		cause   error
		want    string
	}{
		{"the backend's own driver error", "device generators need cuRAND (libcurand.so.10)", missing,
			"cuda: device generators need cuRAND (libcurand.so.10): dlopen failed: libcurand.so.10: cannot open shared object file: not supported by this backend"},
		{"another's error, as it is", "device 0's free memory is unknown", other,
			"cuda: device 0's free memory is unknown: hostmem: /proc/meminfo has no MemAvailable: not supported by this backend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Unusable("cuda", tc.context, tc.cause, driver.ErrNotSupported)
			assert.EqualError(t, err, tc.want)
			assert.ErrorIs(t, err, driver.ErrNotSupported)
			assert.ErrorIs(t, err, tc.cause)
		})
	}
	var de *driver.DriverError
	assert.ErrorAs(t, Unusable("cuda", "x", missing, driver.ErrNotSupported), &de)
	assert.ErrorIs(t, Unusable("cuda", "x", missing, driver.ErrNotSupported), driver.ErrDriverNotFound)
}
