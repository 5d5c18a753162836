package device

import (
	"context"
	"fmt"

	"github.com/gpuinit/gpuinit/lazy"
)

// minDriverKey carries the driver floor a Runtime asks of its backend's Init.
type minDriverKey struct{}

// MinDriverVersion returns the oldest driver version the Runtime initializing
// through ctx accepts, in the backend's own numbering (CUDA: 12040 for 12.4),
// or 0 when it sets none. Backends call it from Init and fail with
// ErrDriverMismatch, naming both versions, on an older driver; each backend
// also has its own floor.
func MinDriverVersion(ctx context.Context) int {
	v, _ := ctx.Value(minDriverKey{}).(int)
	return v
}

// RequireDriverVersion raises the oldest driver version this Runtime accepts
// to version (CUDA: 12040 for 12.4), for a server whose own engine's runtime
// needs more than the backend does. It must be called before the first Init:
// afterwards it changes nothing and returns an error, since the driver is
// already up.
func (r *Runtime) RequireDriverVersion(version int) error {
	if s := r.init.State(); s != lazy.Uninitialized {
		return fmt.Errorf("device: RequireDriverVersion(%d) on a runtime that is already %s: call it before the first Init", version, s)
	}
	for {
		old := r.minDriver.Load()
		if int64(version) <= old || r.minDriver.CompareAndSwap(old, int64(version)) {
			return nil
		}
	}
}

// withDriverFloor is the context the backend's Init gets.
func (r *Runtime) withDriverFloor(ctx context.Context) context.Context {
	if v := r.minDriver.Load(); v > 0 {
		return context.WithValue(ctx, minDriverKey{}, int(v))
	}
	return ctx
}
