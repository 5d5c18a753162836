package devicetest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
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
		"watch ignores its end":   {stubbornWatch{sim.New()}, []devicetest.Option{devicetest.WatchStopBound(50 * time.Millisecond)}, "did not return within 50ms of its context's end"},
		"watch names no device":   {strayWatch{sim.New()}, nil, "reported xid on device 7"},
		"canary's plain error":    {plainCanary{sim.New()}, nil, "want nil, or a *driver.DriverError"},
		"memory free above total": {badMemory{sim.New()}, nil, "want free no more than a total"},
	}
}

// stubbornWatch's health watch ignores its context's end for a while: the
// kit's bound is 50 ms in this test, and the watch returns ten times later.
type stubbornWatch struct{ *sim.Backend }

func (stubbornWatch) WatchHealth(ctx context.Context, report func(healthwatch.Event)) error {
	report(healthwatch.Event{Ordinal: 0, Kind: healthwatch.KindWatching})
	<-ctx.Done()
	time.Sleep(500 * time.Millisecond) // past the kit's bound, but not for ever
	return nil
}

// TestTheKitGivesAWatchThreeSecondsToStop: the default bound is "a few
// seconds", as driver.HealthWatcher's contract says.
func TestTheKitGivesAWatchThreeSecondsToStop(t *testing.T) {
	assert.Equal(t, 3*time.Second, devicetest.DefaultWatchStopBound)
}

// strayWatch reports a device the backend does not have.
type strayWatch struct{ *sim.Backend }

func (strayWatch) WatchHealth(ctx context.Context, report func(healthwatch.Event)) error {
	report(healthwatch.Event{Ordinal: 7, Kind: healthwatch.KindXid, Action: healthwatch.Count, Code: 13})
	<-ctx.Done()
	return nil
}

// plainCanary fails without saying the driver's code.
type plainCanary struct{ *sim.Backend }

func (plainCanary) Canary(int) error { return errors.New("it broke") }

// badMemory reads more free memory than there is.
type badMemory struct{ *sim.Backend }

func (b badMemory) ReadMemory(ordinal int) (driver.Memory, error) {
	m, err := b.Backend.ReadMemory(ordinal)
	m.Free = m.Total + 1
	return m, err
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
