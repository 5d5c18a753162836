package errkind

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/stretchr/testify/assert"
)

func TestEveryKindNamesItsSentinelMostSpecificFirst(t *testing.T) {
	for _, k := range table {
		wrapped := fmt.Errorf("context: %w", k.err)
		assert.Equal(t, k.name, Of(wrapped), "%v", k.err)
		assert.Same(t, k.err, Sentinel(k.name))
	}
	assert.Equal(t, "not-ready", Of(driver.ErrNotReady), "not no-device, which it wraps")
	assert.Equal(t, "driver-too-old", Of(driver.ErrDriverTooOld), "not driver-mismatch, which it wraps")
	assert.Equal(t, "device-lost", Of(driver.ErrDeviceHung))
	assert.Empty(t, Of(errors.New("other")))
	assert.Nil(t, Sentinel("bogus"))
}
