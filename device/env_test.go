package device_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestABadSettingIsAnErrorOfOpen: every GPUINIT_* variable that is set is
// checked at Open, for auto and for a named backend, and a bad value is an
// error naming it; so is every name gpuinit does not read, with the name
// meant where one is near.
func TestABadSettingIsAnErrorOfOpen(t *testing.T) {
	dir := t.TempDir()
	gpuEnv := []driver.EnvVar{{Name: "GPUINIT_GPU_KNOB", Check: func(v string) error {
		if v != "ok" {
			return fmt.Errorf("%w: GPUINIT_GPU_KNOB=%q: want ok", device.ErrBadSetting, v)
		}
		return nil
	}}, {Name: "GPUINIT_GPU_LIBRARY"}}
	for _, tc := range []struct {
		name, variable, value string
		says                  string // "" for a value Open takes
	}{
		{"a preflight deadline that does not parse", "GPUINIT_PREFLIGHT", "bogus", `GPUINIT_PREFLIGHT="bogus": want a deadline`},
		{"a preflight deadline", "GPUINIT_PREFLIGHT", "30s", ""},
		{"a device root that is not there", "GPUINIT_DEV_ROOT", "/nonexistent", `GPUINIT_DEV_ROOT="/nonexistent" names no directory`},
		{"a device root", "GPUINIT_DEV_ROOT", dir, ""},
		{"a backend's own variable, refused by its check", "GPUINIT_GPU_KNOB", "bad", `GPUINIT_GPU_KNOB="bad": want ok`},
		{"a backend's own variable", "GPUINIT_GPU_KNOB", "ok", ""},
		{"a blank value is unset", "GPUINIT_GPU_KNOB", " ", ""},
		{"a misspelt name", "GPUINIT_PREFLIHGT", "30s", "device: GPUINIT_PREFLIHGT is set, but gpuinit reads no such variable (did you mean GPUINIT_PREFLIGHT?): bad setting"},
		{"a misspelt backend variable", "GPUINIT_GPU_KNBO", "ok", "(did you mean GPUINIT_GPU_KNOB?): bad setting"},
		{"a fake driver's variable is none of a user's", "GPUINIT_FAKE_GPU_KNOB", "x", ""},
		{"the preflight child's marker is none of a user's", "GPUINIT_PREFLIGHT_CHILD", "gpu", ""},
		{"a test child's marker is none of a user's", "GPUINIT_CUDA_TEST_CHILD", "1", ""},
		// Names more than two edits from every known one.
		{"a word left out", "GPUINIT_SIM_DELAY", "3s", "device: GPUINIT_SIM_DELAY is set, but gpuinit reads no such variable (did you mean GPUINIT_SIM_INIT_DELAY?): bad setting"},
		{"a word added", "GPUINIT_PREFLIGHT_DEADLINE", "30s", "device: GPUINIT_PREFLIGHT_DEADLINE is set, but gpuinit reads no such variable (did you mean GPUINIT_PREFLIGHT?): bad setting"},
		{"a word cut short", "GPUINIT_GPU_LIB", "/x.so", "device: GPUINIT_GPU_LIB is set, but gpuinit reads no such variable (did you mean GPUINIT_GPU_LIBRARY?): bad setting"},
		{"a name near none", "GPUINIT_SOMETHING_ELSE", "x", `GPUINIT_SOMETHING_ELSE is set, but gpuinit reads no such variable (nor does this binary have backend cuda or hip, whose variables it would read): unset it`},
		// Spelt in two parts, lest TestEveryTestVariableIsExempt take it for a test's.
		{"a name with _TEST_ in it is a setting's typo, not a test's", "GPUINIT_PREFLIGHT" + "_TEST_RUN", "1", "device: GPUINIT_PREFLIGHT_TEST_RUN is set, but gpuinit reads no such variable (did you mean GPUINIT_PREFLIGHT?): bad setting"},
	} {
		for _, name := range []string{"auto", "gpu"} {
			t.Run(tc.name+" ("+name+")", func(t *testing.T) {
				t.Setenv(tc.variable, tc.value)
				var g device.Registry
				g.Register(driver.Registration{Name: "gpu", GPU: true, Open: newSim, Env: gpuEnv})
				g.Register(sim.Registration())
				_, err := g.Open(name)
				if tc.says == "" {
					assert.NoError(t, err)
					return
				}
				assert.ErrorIs(t, err, device.ErrBadSetting)
				assert.ErrorContains(t, err, tc.says)
				assert.False(t, errors.Is(err, device.ErrNotCompiled))
			})
		}
	}
}

// TestSimsVariablesAreCheckedAtOpen: sim's variables are in the table, so a
// bad value of one is an error of Open("sim"), wrapping ErrBadSetting.
func TestSimsVariablesAreCheckedAtOpen(t *testing.T) {
	for _, tc := range []struct{ variable, value, says string }{
		{sim.EnvDevices, "lots", `GPUINIT_SIM_DEVICES="lots": want a whole number of devices`},
		{sim.EnvInitDelay, "soon", `GPUINIT_SIM_INIT_DELAY="soon": want a duration`},
		{sim.EnvFail, "bogus", `GPUINIT_SIM_FAIL="bogus": want one of no-device`},
	} {
		t.Run(tc.variable, func(t *testing.T) {
			t.Setenv(tc.variable, tc.value)
			var g device.Registry
			g.Register(sim.Registration())
			_, err := g.Open("sim")
			assert.ErrorIs(t, err, device.ErrBadSetting)
			assert.ErrorContains(t, err, tc.says)
		})
	}
}

// TestSettingsListEveryVariableOnce: device's own variables first, then each
// backend's in name order, each with what it sets and its default.
func TestSettingsListEveryVariableOnce(t *testing.T) {
	var g device.Registry
	g.Register(sim.Registration())
	g.Register(driver.Registration{Name: "gpu", GPU: true, Open: newSim,
		Env: []driver.EnvVar{{Name: "GPUINIT_GPU_KNOB", Doc: "a knob", Default: "off"}}})
	var names []string
	for _, v := range g.Settings() {
		names = append(names, v.Name)
		assert.NotEmpty(t, v.Doc, v.Name)
		assert.NotEmpty(t, v.Default, v.Name)
	}
	assert.Equal(t, []string{"GPUINIT_BACKEND", "GPUINIT_PREFLIGHT", "GPUINIT_DEV_ROOT", "GPUINIT_SYSFS_ROOT", "GPUINIT_PROC_ROOT",
		"GPUINIT_GPU_KNOB", "GPUINIT_SIM_DEVICES", "GPUINIT_SIM_INIT_DELAY", "GPUINIT_SIM_FAIL"}, names)
	require.NotEmpty(t, names)
}

func TestGPUINIT_PREFLIGHTOverridesTheCode(t *testing.T) {
	for _, tc := range []struct {
		env      string
		use      bool // UsePreflight in the code
		attempts int
		err      string
	}{
		{"off", true, 0, ""},
		{"0", true, 0, ""},
		{"on", false, 1, ""},
		{"20s", false, 1, ""},
		{"", true, 1, ""},
		{"", false, 0, ""},
		{"soon", true, 0, `GPUINIT_PREFLIGHT="soon": want a deadline`},
		{"-1s", false, 0, `GPUINIT_PREFLIGHT="-1s": want a deadline`},
	} {
		t.Run(fmt.Sprintf("%q use=%v", tc.env, tc.use), func(t *testing.T) {
			var g device.Registry
			g.Register(simRegistration(newSim))
			rt := openIn(t, &g, "sim")
			if tc.use {
				require.NoError(t, rt.UsePreflight(device.Preflight{Command: []string{os.Args[0], "-test.run=^$"}}))
			}
			t.Setenv("GPUINIT_PREFLIGHT", tc.env)
			if !tc.use {
				// The default child is this executable, which serves the
				// preflight from TestMain.
				t.Setenv("GPUINIT_PREFLIGHT", tc.env)
			}
			err := rt.Init(context.Background())
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				assert.Equal(t, device.ClassNeedsOperator, device.ClassOf(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.attempts, rt.Stats().BringUp.Attempts)
			assert.Equal(t, tc.attempts > 0, rt.Stats().BringUp.Preflight)
			assert.ErrorContains(t, rt.UsePreflight(device.Preflight{}), "call it before the first Init")
		})
	}
}

// TestTheVariableOverridesOnlyWhatItNames: GPUINIT_PREFLIGHT's deadline or
// "on" keeps the code's other settings: RetryFor -1 ("never retry") stays,
// so a not-yet child is tried once, not for the default five minutes.
func TestTheVariableOverridesOnlyWhatItNames(t *testing.T) {
	for _, env := range []string{"2s", "on", ""} {
		t.Run(fmt.Sprintf("%q", env), func(t *testing.T) {
			rt, _ := preflighted(t, false, device.Preflight{RetryFor: -1})
			t.Setenv(envChildDoes, "not-ready-times")
			t.Setenv(envChildCounter, filepath.Join(t.TempDir(), "attempts"))
			t.Setenv(envChildTimes, "100")
			t.Setenv("GPUINIT_PREFLIGHT", env)
			waits := device.RecordRetryWaits(t)
			err := rt.Init(context.Background())
			assert.ErrorIs(t, err, driver.ErrNotReady)
			assert.Equal(t, 1, rt.Stats().BringUp.Attempts, "RetryFor -1: one child, never a retry")
			assert.Empty(t, waits())
		})
	}
}

func TestABadPreflightVariableIsAnErrorOfUsePreflight(t *testing.T) {
	var g device.Registry
	g.Register(simRegistration(newSim))
	rt := openIn(t, &g, "sim")
	t.Setenv("GPUINIT_PREFLIGHT", "bogus")
	err := rt.UsePreflight(device.Preflight{})
	assert.ErrorContains(t, err, `GPUINIT_PREFLIGHT="bogus"`)
}
