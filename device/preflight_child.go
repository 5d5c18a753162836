package device

import (
	"context"
	"fmt"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/preflight"
)

// ServePreflight makes this process a preflight child if it was started as
// one: it runs the backend's Init and device query, writes what happened to
// the pipe the parent gave it, and exits. Otherwise it returns at once, doing
// nothing. Package device/backends calls it from its init function, so that
// a server that imports it needs no code of its own; a server that registers
// its backends otherwise calls it first thing in main, after its backends'
// packages have registered them. The child serves DefaultRegistry's
// backends.
func ServePreflight() {
	preflight.Serve(func(name string) preflight.Report { return checkBackend(DefaultRegistry, name) })
}

// checkBackend is the child's work: open the backend from g, Init it, and
// read its devices.
func checkBackend(g *Registry, name string) preflight.Report {
	rep := preflight.NewReport(name)
	var b driver.Backend
	fail := func(err error) preflight.Report {
		rep.Error = preflight.ErrorOf(err)
		if b != nil && rep.DriverVersion == 0 {
			// What a driver that loaded but failed says of its version, for
			// the parent's account of the failure.
			rep.DriverVersion, _ = b.DriverVersion()
		}
		return rep
	}
	reg, ok := g.lookup(name)
	if !ok || reg.Open == nil {
		// The parent has the backend: this program does not, whatever the
		// name (never "unknown": the parent knows it).
		return fail(fmt.Errorf("%w: the preflight child has no %s backend", ErrNotCompiled, name))
	}
	opened, err := g.openBackend(reg)
	if err != nil {
		return fail(err)
	}
	b = opened
	if err := b.Init(context.Background()); err != nil {
		return fail(err)
	}
	rep.DriverVersion, _ = b.DriverVersion()
	n, err := b.Count()
	if err != nil {
		return fail(err)
	}
	if n <= 0 {
		return fail(fmt.Errorf("%w: %s: the driver initialized but reports %d devices", ErrNoDevice, name, n))
	}
	for i := range n {
		info, err := b.Device(i)
		if err != nil {
			return fail(err)
		}
		rep.Devices = append(rep.Devices, info.Name)
	}
	return rep
}
