package devicetest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
)

// A kit that cannot fail proves nothing: each broken backend below breaks one
// rule, and the kit (Check, TestBackend's error-returning twin) must fail on
// it and say why. They are made afresh for each run: initOnceOnly keeps
// state, and a second run (-count) over the same one would pass the kit.
func broken() map[string]struct {
	backend driver.Backend
	opts    []devicetest.Option
	says    string
} {
	return map[string]struct {
		backend driver.Backend
		opts    []devicetest.Option
		says    string
	}{
		"unmapped init error":     {unmappedInit{sim.New()}, nil, "want a *driver.DriverError"},
		"negative ordinal served": {lenientOrdinals{sim.New()}, nil, "want an error wrapping driver.ErrInvalidDevice"},
		"zero devices after init": {zeroDevices{sim.New()}, nil, "fails Init with driver.ErrNoDevice"},
		"wrong numbers drawn":     {sim.New(), []devicetest.Option{devicetest.GeneratorsDraw(philox.FillSequential)}, "seed 42, offset 8: drew"},
		"empty name":              {renamed{sim.New(), ""}, nil, "want the registered name"},
		"unmapped version error":  {versionFails{sim.New()}, nil, "DriverVersion before Init failed"},
		"init not memoized":       {&initOnceOnly{Backend: sim.New()}, nil, "a second Init returned"},
	}
}

type versionFails struct{ *sim.Backend }

func (versionFails) DriverVersion() (int, error) { return 0, errors.New("no library yet") }

// initOnceOnly succeeds once, then fails: an Init that is not memoized.
type initOnceOnly struct {
	*sim.Backend
	calls int
}

func (b *initOnceOnly) Init(ctx context.Context) error {
	if b.calls++; b.calls > 1 {
		return &device.DriverError{Backend: "sim", Op: "simInit", Hint: "none", Sentinel: device.ErrNoDevice}
	}
	return b.Backend.Init(ctx)
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

func TestKitCatchesBrokenBackends(t *testing.T) {
	for name, b := range broken() {
		t.Run(name, func(t *testing.T) {
			err := devicetest.Check(b.backend, b.opts...)
			if assert.Error(t, err, "the kit passed a broken backend") {
				assert.Contains(t, err.Error(), b.says)
			}
		})
	}
}

func TestSimPasses(t *testing.T) {
	devicetest.TestBackend(t, sim.New(sim.WithDevices(3)), devicetest.GeneratorsDraw(philox.FillCURAND))
	assert.NoError(t, devicetest.Check(sim.New(sim.WithDevices(3)), devicetest.GeneratorsDraw(philox.FillCURAND)))
}

func TestCheckSkipsWhatNeedsADeviceWithoutAFinding(t *testing.T) {
	assert.NoError(t, devicetest.Check(sim.New(sim.WithFailure(sim.NoDevice))),
		"a well-mapped no-device failure keeps the contract; the device parts cannot run")
}
