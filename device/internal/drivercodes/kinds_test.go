package drivercodes

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/stretchr/testify/assert"
)

func TestEveryKindNamesItsSentinelMostSpecificFirst(t *testing.T) {
	for _, k := range kinds {
		wrapped := fmt.Errorf("context: %w", k.err)
		assert.Equal(t, k.name, KindOf(wrapped), "%v", k.err)
		assert.Same(t, k.err, KindSentinel(k.name))
	}
	assert.Equal(t, "not-ready", KindOf(driver.ErrNotReady), "not no-device, which it wraps")
	assert.Equal(t, "driver-too-old", KindOf(driver.ErrDriverTooOld), "not driver-mismatch, which it wraps")
	assert.Equal(t, "device-lost", KindOf(driver.ErrDeviceHung))
	assert.Empty(t, KindOf(errors.New("other")))
	assert.Nil(t, KindSentinel("bogus"))
}
