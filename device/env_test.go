package device_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/stretchr/testify/assert"
)

// TestABadSettingIsAnErrorOfOpen: every GPUINIT_* variable that is set is
// checked at Open, for auto and for a named backend, and a bad value is an
// error naming it; so is a misspelt variable's name.
func TestABadSettingIsAnErrorOfOpen(t *testing.T) {
	dir := t.TempDir()
	gpuEnv := []driver.EnvVar{{Name: "GPUINIT_GPU_KNOB", Check: func(v string) error {
		if v != "ok" {
			return fmt.Errorf("%w: GPUINIT_GPU_KNOB=%q: want ok", device.ErrBadSetting, v)
		}
		return nil
	}}}
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
		{"a misspelt name", "GPUINIT_PREFLIHGT", "30s", "GPUINIT_PREFLIHGT is set, but gpuinit reads no such variable: did you mean GPUINIT_PREFLIGHT?"},
		{"a misspelt backend variable", "GPUINIT_GPU_KNBO", "ok", "did you mean GPUINIT_GPU_KNOB?"},
		{"a fake driver's variable is none of a user's", "GPUINIT_FAKE_GPU_KNOB", "x", ""},
		{"a name far from every known one", "GPUINIT_SOMETHING_ELSE", "x", ""},
	} {
		for _, name := range []string{"auto", "gpu"} {
			t.Run(tc.name+" ("+name+")", func(t *testing.T) {
				t.Setenv(tc.variable, tc.value)
				var g device.Registry
				g.Register(driver.Registration{Name: "gpu", GPU: true, Open: newSim, Env: gpuEnv})
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
