package device

import (
	"context"
	"fmt"

	"github.com/gpuinit/gpuinit/device/driver"
)

// Do initializes on first use, then runs fn on a locked OS thread with
// device ordinal current. Afterwards it restores the thread's previous
// device or context, even if fn panics. The panic goes on after the
// restore. Do is for a server's own cgo engines, whose calls use the
// thread's current device. fn must not start goroutines that expect it.
//
// For CUDA the device's primary context is made current. It is retained
// once, at the first Do or generator for the device, and kept for the life
// of the process. The CUDA runtime (cudart, and cuBLAS or llama.cpp on top
// of it) shares that primary context with the driver API. So what fn does
// through them lands in the same context. A backend without devices to make
// current (sim) runs fn on the locked thread. A backend that does not
// implement [driver.DeviceRunner] gets an error wrapping [ErrNotSupported].
//
// fn runs under the call deadline ([Runtime.SetCallDeadline]). Past it, the
// device is lost as hung ([driver.ErrDeviceHung]) and readiness fails. Later
// calls on the device are refused at once with its [LostDevice]. fn itself
// goes on, since a driver call cannot be interrupted. A Do on a lost device
// returns its LostDevice without running fn.
// A nil ctx panics, naming Do.
func (r *Runtime) Do(ctx context.Context, ordinal int, fn func() error) error {
	nilContext(ctx, "Do")
	if err := r.Init(ctx); err != nil {
		return err
	}
	if err := r.checkOrdinal(ordinal); err != nil {
		return err
	}
	dr, ok := driver.Capability[driver.DeviceRunner](r.Backend())
	if !ok {
		return fmt.Errorf("%w: backend %s cannot make a device current", ErrNotSupported, r.Name())
	}
	return r.watched(ordinal, &opDo, func() error { return dr.Do(ordinal, fn) })
}
