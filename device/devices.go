package device

import (
	"context"
	"fmt"
	"slices"

	"github.com/gpuinit/gpuinit/device/driver"
)

// DeviceCount initializes on first use and reports the number of devices.
// A nil ctx panics, naming DeviceCount.
func (r *Runtime) DeviceCount(ctx context.Context) (int, error) {
	nilContext(ctx, "DeviceCount")
	if err := r.Init(ctx); err != nil {
		return 0, err
	}
	return len(*r.devices.Load()), nil
}

// Device initializes on first use and describes one device. An ordinal out
// of range gets an error wrapping [ErrInvalidDevice] with the valid range.
// A nil ctx panics, naming Device.
func (r *Runtime) Device(ctx context.Context, ordinal int) (Info, error) {
	nilContext(ctx, "Device")
	if err := r.Init(ctx); err != nil {
		return Info{}, err
	}
	if err := r.checkOrdinal(ordinal); err != nil {
		return Info{}, err
	}
	return (*r.devices.Load())[ordinal], nil
}

// Devices initializes on first use and describes every device. The slice
// is the caller's.
// A nil ctx panics, naming Devices.
func (r *Runtime) Devices(ctx context.Context) ([]Info, error) {
	nilContext(ctx, "Devices")
	if err := r.Init(ctx); err != nil {
		return nil, err
	}
	return slices.Clone(*r.devices.Load()), nil
}

// CheckDevice returns nil if ordinal names a device in service. It never
// initializes and never touches the backend. For an ordinal the Runtime has
// not, it returns an error wrapping [ErrInvalidDevice]. Until the driver's
// init has succeeded the devices are not known. The error for an ordinal of
// 0 or more then also wraps [driver.ErrNotInitialized]. For a lost device it
// returns the device's [LostDevice], which wraps [ErrDeviceLost]. After
// Shutdown it returns [ErrClosed], before anything else.
func (r *Runtime) CheckDevice(ordinal int) error {
	if r.closed() {
		return ErrClosed
	}
	if err := r.checkOrdinal(ordinal); err != nil {
		return err
	}
	if lost, ok := r.findLost(ordinal); ok {
		return lost
	}
	return nil
}

// checkOrdinal returns nil if ordinal names a device. Otherwise it returns
// an error wrapping ErrInvalidDevice that gives the valid range. While the
// devices are not known, the error for an ordinal of 0 or more also wraps
// driver.ErrNotInitialized.
func (r *Runtime) checkOrdinal(ordinal int) error {
	devices := r.devices.Load()
	switch {
	case ordinal < 0:
		return fmt.Errorf("device: ordinal %d: ordinals start at 0: %w", ordinal, ErrInvalidDevice)
	case devices == nil:
		return &failure{msg: fmt.Sprintf("device: ordinal %d: the %s runtime has not initialized, so its devices are not known yet: %v", ordinal, r.Name(), ErrInvalidDevice),
			causes: []error{ErrInvalidDevice, driver.ErrNotInitialized}}
	case ordinal >= len(*devices):
		n := len(*devices)
		return fmt.Errorf("device: ordinal %d: %s has %d devices, valid ordinals are 0..%d: %w", ordinal, r.Name(), n, n-1, ErrInvalidDevice)
	}
	return nil
}
