package device

import (
	"context"
	"fmt"
	"maps"
	"sync"
)

// minDriverKey carries the driver floors a Runtime asks of its backend's Init.
type minDriverKey struct{}

// MinDriverVersion returns the oldest version of backend's driver that the
// Runtime initializing through ctx accepts, in that backend's own numbering
// (CUDA: 12040 for 12.4), or 0 when it sets none. Backends call it from Init
// and fail with ErrDriverMismatch, naming both versions, on an older driver;
// each backend also has its own floor.
func MinDriverVersion(ctx context.Context, backend string) int {
	floors, _ := ctx.Value(minDriverKey{}).(map[string]int)
	return floors[backend]
}

// RequireDriverVersion raises the oldest version of backend's driver ("cuda",
// "hip") this Runtime accepts to version, in that backend's own numbering
// (CUDA: 12040 for 12.4; HIP: hipDriverGetVersion's), for a server whose own
// engine's runtime needs more than the backend does. It must be called before
// the first Init: once initialization has read the floors it changes nothing
// and returns an error.
func (r *Runtime) RequireDriverVersion(backend string, version int) error {
	r.floor.mu.Lock()
	defer r.floor.mu.Unlock()
	if r.floor.read {
		return fmt.Errorf("device: RequireDriverVersion(%s, %d) on a runtime that has started initializing: call it before the first Init", backend, version)
	}
	if r.floor.versions == nil {
		r.floor.versions = map[string]int{}
	}
	r.floor.versions[backend] = max(r.floor.versions[backend], version)
	return nil
}

// driverFloors is the Runtime's RequireDriverVersion record.
type driverFloors struct {
	mu       sync.Mutex // protects following fields
	versions map[string]int
	read     bool // initialization has read them: too late to change
}

// withDriverFloors is the context the backend's Init gets; it marks the floors
// read, so that a later RequireDriverVersion fails instead of being ignored.
func (r *Runtime) withDriverFloors(ctx context.Context) context.Context {
	r.floor.mu.Lock()
	defer r.floor.mu.Unlock()
	r.floor.read = true
	if len(r.floor.versions) == 0 {
		return ctx
	}
	return context.WithValue(ctx, minDriverKey{}, maps.Clone(r.floor.versions))
}

// checkDriverFloor applies the floor ctx carries for b (the Runtime's
// RequireDriverVersion, through withDriverFloors) once b is initialized.
// Backends check the floor before they initialize the driver, but they
// initialize once per process: a second Runtime over an initialized backend,
// or one whose backend ignores the floor, reaches no check there. This one
// holds for every Runtime and backend; under auto it runs for each candidate,
// so that one too old is passed over like one that failed Init.
func checkDriverFloor(ctx context.Context, b Backend) error {
	need := MinDriverVersion(ctx, b.Name())
	if need == 0 {
		return nil
	}
	v, err := b.DriverVersion()
	if err != nil {
		return fmt.Errorf("device: checking the %s driver against RequireDriverVersion(%d): %w", b.Name(), need, err)
	}
	if v < need {
		return &DriverError{Backend: b.Name(), Op: "DriverVersion", Sentinel: ErrDriverMismatch,
			Message: fmt.Sprintf("the driver reports %d, this runtime requires %d (RequireDriverVersion)", v, need),
			Hint:    "upgrade the driver, or lower the version passed to RequireDriverVersion"}
	}
	return nil
}
