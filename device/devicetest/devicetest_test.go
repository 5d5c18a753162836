package devicetest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
)

// A kit that cannot fail proves nothing: each broken backend below breaks one
// rule, and TestBackend, run on it in a child process, must fail and say why.
var broken = map[string]struct {
	backend device.Backend
	opts    []devicetest.Option
	says    string
}{
	"unmapped init error":     {unmappedInit{sim.New()}, nil, "want a *device.DriverError"},
	"negative ordinal served": {lenientOrdinals{sim.New()}, nil, "want an error wrapping device.ErrInvalidDevice"},
	"zero devices after init": {zeroDevices{sim.New()}, nil, "fails Init with device.ErrNoDevice"},
	"wrong numbers drawn":     {sim.New(), []devicetest.Option{devicetest.GeneratorsDraw(philox.FillSequential)}, "seed 42, offset 8: drew"},
	"empty name":              {renamed{sim.New(), ""}, nil, "want the registered name"},
}

type unmappedInit struct{ *sim.Backend }

func (unmappedInit) Init(context.Context) error { return errors.New("it broke") }

type lenientOrdinals struct{ *sim.Backend }

func (b lenientOrdinals) Device(ordinal int) (device.Info, error) {
	return b.Backend.Device(max(ordinal, 0))
}

type zeroDevices struct{ *sim.Backend }

func (zeroDevices) Count() (int, error) { return 0, nil }

type renamed struct {
	*sim.Backend
	name string
}

func (r renamed) Name() string { return r.name }

const envBroken = "GPUINIT_DEVICETEST_BROKEN"

func TestBrokenBackendChild(t *testing.T) {
	name := os.Getenv(envBroken)
	if name == "" {
		t.Skip("run by TestKitCatchesBrokenBackends")
	}
	b := broken[name]
	devicetest.TestBackend(t, b.backend, b.opts...)
}

func TestKitCatchesBrokenBackends(t *testing.T) {
	for name, b := range broken {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenBackendChild$", "-test.v")
			cmd.Env = append(os.Environ(), envBroken+"="+name)
			out, err := cmd.CombinedOutput()
			var exitErr *exec.ExitError
			assert.ErrorAs(t, err, &exitErr, "the kit passed a broken backend:\n%s", out)
			assert.Contains(t, string(out), b.says)
		})
	}
}

func TestSimPasses(t *testing.T) {
	devicetest.TestBackend(t, sim.New(sim.WithDevices(3)), devicetest.GeneratorsDraw(philox.FillCURAND))
}
