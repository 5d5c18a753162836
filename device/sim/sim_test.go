package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnvironmentIsParsedStrictly(t *testing.T) {
	for _, tc := range []struct {
		name, env, value, wantErr string
	}{
		{"devices not a number", sim.EnvDevices, "two", "GPUINIT_SIM_DEVICES"},
		{"devices negative", sim.EnvDevices, "-1", "from 0 to 64"},
		{"devices too many", sim.EnvDevices, "65", "from 0 to 64"},
		{"delay not a duration", sim.EnvInitDelay, "5", "GPUINIT_SIM_INIT_DELAY"},
		{"delay negative", sim.EnvInitDelay, "-1s", "non-negative"},
		{"delay overflowing", sim.EnvInitDelay, "9999999h", "invalid duration"},
		{"unknown failure", sim.EnvFail, "on-fire", "no-device, not-ready, no-driver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			_, err := sim.OptionsFromEnv()
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
	t.Setenv(sim.EnvDevices, " 3 ")
	t.Setenv(sim.EnvInitDelay, "1ms")
	t.Setenv(sim.EnvFail, "")
	opts, err := sim.OptionsFromEnv()
	require.NoError(t, err)
	b := sim.New(opts...)
	require.NoError(t, b.Init(context.Background()))
	n, _ := b.Count()
	assert.Equal(t, 3, n)
}

// One rule for every variable: empty or blank means the default.
func TestEmptyVariablesMeanTheDefault(t *testing.T) {
	for _, name := range []string{sim.EnvDevices, sim.EnvInitDelay, sim.EnvFail} {
		for _, value := range []string{"", "  "} {
			t.Run(name+"="+value, func(t *testing.T) {
				t.Setenv(name, value)
				opts, err := sim.OptionsFromEnv()
				require.NoError(t, err)
				assert.Empty(t, opts)
			})
		}
	}
}

func TestFailuresMapOntoSentinels(t *testing.T) {
	for _, tc := range []struct {
		f    sim.Failure
		want error
		code int
	}{
		{sim.NoDevice, device.ErrNoDevice, 100},
		{sim.NoDriver, device.ErrDriverNotFound, 0},
		{sim.DriverMismatch, device.ErrDriverMismatch, 803},
		{sim.Unknown, nil, 999},
	} {
		t.Run(string(tc.f), func(t *testing.T) {
			err := sim.New(sim.WithFailure(tc.f)).Init(context.Background())
			var de *device.DriverError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tc.code, de.Code)
			if tc.f == sim.NoDriver {
				assert.Equal(t, "dlopen", de.Op, "a missing library fails to load, as cuda's does")
			} else {
				assert.Equal(t, "cuInit", de.Op, "the failing call is named as the one that failed")
			}
			assert.NotEmpty(t, de.Hint)
			if tc.want != nil {
				assert.ErrorIs(t, err, tc.want)
			}
			for _, other := range []error{device.ErrNoDevice, device.ErrDriverNotFound, device.ErrDriverMismatch} {
				if other != tc.want {
					assert.NotErrorIs(t, err, other)
				}
			}
		})
	}
	assert.ErrorIs(t, sim.New(sim.WithDevices(0)).Init(context.Background()), device.ErrNoDevice)
}

func TestCountBeforeInitFailsLikeTheDriver(t *testing.T) {
	b := sim.New()
	_, err := b.Count()
	var de *device.DriverError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "CUDA_ERROR_NOT_INITIALIZED", de.Name)
	v, err := b.DriverVersion()
	require.NoError(t, err)
	assert.Equal(t, 12020, v)
}

func TestInitDelayHonoursContext(t *testing.T) {
	b := sim.New(sim.WithInitDelay(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, b.Init(ctx), context.DeadlineExceeded)
}

func TestPanicFailurePanics(t *testing.T) {
	assert.Panics(t, func() { _ = sim.New(sim.WithFailure(sim.Panic)).Init(context.Background()) })
}

func TestGeneratorDrawsCURANDNumbers(t *testing.T) {
	b := sim.New()
	require.NoError(t, b.Init(context.Background()))
	g, err := b.NewGenerator(1)
	require.NoError(t, err)
	require.NoError(t, g.SetSeed(42))
	require.NoError(t, g.SetOffset(3))
	got := make([]uint32, 10)
	require.NoError(t, g.Generate(got[:4]))
	require.NoError(t, g.Generate(got[4:]))
	want := make([]uint32, 10)
	philox.FillCURAND(want, 42, 3)
	assert.Equal(t, want, got)
	_, err = b.NewGenerator(2)
	assert.ErrorIs(t, err, device.ErrInvalidDevice)
}

func TestHealthWatchReportsInjectedEventsUntilCancelled(t *testing.T) {
	b := sim.New(sim.WithDevices(2))
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan healthwatch.Event, 8)
	done := make(chan error)
	go func() { done <- b.WatchHealth(ctx, func(ev healthwatch.Event) { got <- ev }) }()
	for ordinal := range 2 {
		ev := <-got
		assert.Equal(t, healthwatch.KindWatching, ev.Kind)
		assert.Equal(t, ordinal, ev.Ordinal)
		ev = <-got
		assert.Equal(t, healthwatch.KindCounters, ev.Kind, "a simulated device's counters: none, read at once")
		assert.Equal(t, &healthwatch.Counters{}, ev.Counters)
		assert.Equal(t, ordinal, ev.Ordinal)
	}
	b.InjectXid(1, 79)
	ev := <-got
	assert.Equal(t, healthwatch.Lose, ev.Action)
	assert.Equal(t, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", ev.Name)
	b.InjectXid(0, 13)
	assert.Equal(t, healthwatch.Count, (<-got).Action)
	cancel()
	assert.NoError(t, <-done)
	b.InjectXid(0, 79) // no watch runs: returns at once
	assert.Empty(t, got)
}
