package device_test

import (
	"context"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBadOrdinalsAreRefusedWithTheRange(t *testing.T) {
	ctx := context.Background()
	r := device.New(sim.New(sim.WithDevices(2)))
	assert.ErrorContains(t, r.CheckDevice(0), "not initialized", "before init the range is unknown")
	for ordinal, want := range map[int]string{-1: "ordinals start at 0", 2: "valid ordinals are 0..1", 99: "valid ordinals are 0..1"} {
		_, err := r.Device(ctx, ordinal)
		assert.ErrorIs(t, err, device.ErrInvalidDevice)
		assert.ErrorContains(t, err, want)
	}
}

func TestDevicesReturnsACopy(t *testing.T) {
	ctx := context.Background()
	r := device.New(sim.New())
	devices, err := r.Devices(ctx)
	require.NoError(t, err)
	devices[0].Name = "changed"
	d0, err := r.Device(ctx, 0)
	require.NoError(t, err)
	assert.NotEqual(t, "changed", d0.Name)
}
