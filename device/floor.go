package device

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuinit/gpuinit/device/driver"
)

// RequireDriverVersion raises the oldest version of backend's driver this
// Runtime accepts to version. It is for a server whose own engine's runtime
// needs more than the backend does. The version is in that backend's own
// numbering: for CUDA, 12040 is 12.4; for HIP, it is hipDriverGetVersion's.
// backend must be one the Runtime can initialize: its own, or one of auto's
// candidates. version must be positive. Anything else is refused with an
// error, since it would never apply.
//
// The floor is checked after the backend's Init, for every Runtime, whichever
// first initialized the process's driver. Under auto, a candidate below it is
// passed over like one that failed. A named backend fails with an error
// wrapping [ErrDriverMismatch] that names both versions.
//
// RequireDriverVersion must be called before the first Init. Once
// initialization has read the floors, it changes nothing and returns an
// error. After Shutdown it returns [ErrClosed].
func (r *Runtime) RequireDriverVersion(backend string, version int) error {
	if !slices.ContainsFunc(r.candidates, func(reg driver.Registration) bool { return reg.Name == backend }) {
		names := make([]string, len(r.candidates))
		for i, reg := range r.candidates {
			names[i] = fmt.Sprintf("%q", reg.Name)
		}
		return fmt.Errorf("device: RequireDriverVersion(%q, %d): the %s runtime initializes only %s, so that floor would never apply",
			backend, version, r.Name(), strings.Join(names, " or "))
	}
	if version <= 0 {
		return fmt.Errorf("device: RequireDriverVersion(%q, %d): want a positive version in the %s driver's numbering (CUDA: 12040 for 12.4)",
			backend, version, backend)
	}
	if r.closed() {
		return ErrClosed
	}
	r.settings.mu.Lock()
	defer r.settings.mu.Unlock()
	if r.settings.read {
		return fmt.Errorf("device: RequireDriverVersion(%q, %d) on a runtime that has started initializing: call it before the first Init", backend, version)
	}
	if r.settings.floors == nil {
		r.settings.floors = map[string]int{}
	}
	r.settings.floors[backend] = max(r.settings.floors[backend], version)
	return nil
}

// checkDriverFloor applies the floor need (0: none) to b, which Init has
// initialized. Backends check their own floor before initializing the
// driver. But they initialize once per process, so a second Runtime's floor
// could reach no check there. This check holds for every Runtime and
// backend.
func checkDriverFloor(b driver.Backend, name string, need int) error {
	if need == 0 {
		return nil
	}
	v, err := b.DriverVersion()
	if err != nil {
		return fmt.Errorf("device: checking the %s driver against RequireDriverVersion(%d): %w", name, need, err)
	}
	if v < need {
		return &DriverError{Backend: name, Op: "DriverVersion", Sentinel: driver.ErrDriverTooOld,
			Message: fmt.Sprintf("the driver reports %d, this runtime requires %d (RequireDriverVersion)", v, need),
			Hint:    "upgrade the driver, or lower the version passed to RequireDriverVersion"}
	}
	return nil
}
