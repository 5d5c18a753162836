package device

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
)

var opCanary = "canary"

// Canary proves that device ordinal still does work. It makes a round trip
// through the driver: allocate 4 bytes, set them on the device, copy them
// back, free them. The round trip runs under the call deadline, like any
// call after init.
//
// A sticky failure, or a pattern that comes back wrong, loses the device
// ([LossCanary]). Any other failure is counted against it. A lost device's
// Canary returns its [LostDevice] at once. Where the backend has no canary,
// Canary returns an error wrapping [ErrNotSupported]. One canary runs per
// device at a time; another call meanwhile fails at once.
//
// The Runtime initializes first if needed, waiting no longer than ctx.
// Canary waits for the round trip no longer than ctx either. A call that
// hangs goes on in the driver, and the call deadline loses its device.
// A nil ctx panics, naming Canary.
func (r *Runtime) Canary(ctx context.Context, ordinal int) error {
	nilContext(ctx, "Canary")
	if err := r.Init(ctx); err != nil {
		return err
	}
	if err := r.checkOrdinal(ordinal); err != nil {
		return err
	}
	cr, ok := driver.Capability[driver.CanaryRunner](r.Backend())
	if !ok {
		return fmt.Errorf("%w: backend %s has no canary", ErrNotSupported, r.Name())
	}
	if lost, ok := r.findLost(ordinal); ok {
		return lost
	}
	// One round trip per device at a time: a canary stuck in the driver is
	// not joined by another each period.
	if since, busy := r.canaries.LoadOrStore(ordinal, time.Now()); busy {
		return fmt.Errorf("device: the canary on device %d started at %s is still running", ordinal, since.(time.Time).Format(time.RFC3339Nano))
	}
	done := make(chan error, 1) // the round trip may outlive the wait
	go func() {
		defer r.canaries.Delete(ordinal)
		done <- r.watched(ordinal, &opCanary, func() error { return cr.Canary(ordinal) })
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		return fmt.Errorf("device: the canary on device %d is still running: %w", ordinal, context.Cause(ctx))
	}
	var lost LostDevice
	var de *DriverError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &lost):
		return err
	case errors.As(err, &de) && de.Sticky:
		return r.lose(ordinal, LossCanary, de)
	}
	r.count(ordinal)
	return err
}
