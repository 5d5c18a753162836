package device

import (
	"context"
	"fmt"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/preflight"
)

// ServePreflight makes this process a preflight child if it was started as
// one. It runs the backend's Init and device query, writes what happened to
// the pipe the parent gave it, and exits. Otherwise it returns at once,
// doing nothing.
//
// Package device/backends calls it from its init function. A server that
// imports that package needs no code of its own. A server that registers its
// backends another way calls it first thing in main, after its backends'
// packages have registered them. The child serves DefaultRegistry's
// backends.
func ServePreflight() {
	preflight.Serve(func(name string) preflight.Report { return checkBackend(DefaultRegistry, name) })
}

// checkBackend is the child's work. It opens the backend from g, Inits it,
// and reads its devices.
func checkBackend(g *Registry, name string) preflight.Report {
	rep := preflight.NewReport(name)
	var b driver.Backend
	fail := func(err error) preflight.Report {
		rep.Error = preflight.ErrorOf(err)
		if b != nil && rep.DriverVersion == 0 {
			// A driver that loaded but failed may still say its version.
			// The parent puts it in its account of the failure.
			rep.DriverVersion, _ = b.DriverVersion()
		}
		return rep
	}
	reg, ok := g.lookup(name)
	if !ok || reg.Open == nil {
		// The parent has the backend; this program does not. Whatever the
		// name, it is never "unknown": the parent knows it.
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
