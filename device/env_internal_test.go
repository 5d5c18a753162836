package device

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testVariable is a test's GPUINIT_* variable, as a Go string literal.
var testVariable = regexp.MustCompile(`"(GPUINIT_[A-Z0-9_]*_TEST_[A-Z0-9_]*)"`)

// TestEveryTestVariableIsExempt keeps notSettings' test variables exactly
// those the module's tests use: a test child that calls Open with one of its
// own variables set is not refused, and no name is exempt that no test uses.
func TestEveryTestVariableIsExempt(t *testing.T) {
	used := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testVariable.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = true
		}
		return nil
	})
	require.NoError(t, err)
	var exempt []string
	for name := range notSettings {
		if strings.Contains(name, "_TEST_") {
			exempt = append(exempt, name)
		}
	}
	slices.Sort(exempt)
	assert.Equal(t, slices.Sorted(func(yield func(string) bool) {
		for name := range used {
			if !yield(name) {
				return
			}
		}
	}), exempt, "device/env.go's notSettings lists the tests' GPUINIT_*_TEST_* variables")
}

// TestNearestNames: the name meant, or none, for the misspellings users make.
func TestNearestNames(t *testing.T) {
	known := []string{"GPUINIT_BACKEND", "GPUINIT_PREFLIGHT", "GPUINIT_CUDA_LIBRARY", "GPUINIT_CURAND_LIBRARY",
		"GPUINIT_SIM_DEVICES", "GPUINIT_SIM_INIT_DELAY", "GPUINIT_SIM_FAIL", "GPUINIT_DEV_ROOT"}
	for name, want := range map[string]string{
		"GPUINIT_PREFLIGT":           "GPUINIT_PREFLIGHT",
		"GPUINIT_SIM_DELAY":          "GPUINIT_SIM_INIT_DELAY",
		"GPUINIT_PREFLIGHT_DEADLINE": "GPUINIT_PREFLIGHT",
		"GPUINIT_CUDA_LIB":           "GPUINIT_CUDA_LIBRARY",
		"GPUINIT_CURAND_LIB":         "GPUINIT_CURAND_LIBRARY",
		"GPUINIT_DEV":                "GPUINIT_DEV_ROOT",
		"GPUINIT_SIM_DEVICE":         "GPUINIT_SIM_DEVICES",
		"GPUINIT_SOMETHING_ELSE":     "",
		"GPUINIT_GPU":                "",
		"GPUINIT_LIB":                "",
	} {
		assert.Equal(t, want, nearest(name, known), name)
	}
}

// FuzzUnknownNames checks Open's reading of the environment's names on any
// GPUINIT_* name: one Settings does not list, nor notSettings, nor the fake
// drivers' prefix, is refused, named, with a suggestion among the names
// Settings lists or none; any other is let through.
func FuzzUnknownNames(f *testing.F) {
	for _, s := range []string{"SIM_DELAY", "PREFLIGHT_DEADLINE", "CUDA_LIB", "PREFLIGT", "COLOR", "FAKE_X", "PREFLIGHT_CHILD", "SIM_DEVICES", "_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, suffix string) {
		name := "GPUINIT_" + suffix
		if strings.ContainsAny(name, "=\x00") {
			return // no environment variable has such a name
		}
		var g Registry
		g.Register(simLikeRegistration())
		var known []string
		for _, v := range g.Settings() {
			known = append(known, v.Name)
		}
		t.Setenv(name, "")
		err := g.checkEnv(nil)
		exempt := slices.Contains(known, name) || notSettings[name] != "" || strings.HasPrefix(name, fakePrefix)
		if exempt != (err == nil) {
			t.Fatalf("%s: %v", name, err)
		}
		if err != nil && !strings.Contains(err.Error(), name+" is set, but gpuinit reads no such variable") {
			t.Fatalf("%s: %v", name, err)
		}
		meant := nearest(name, known)
		if meant != "" && !slices.Contains(known, meant) || meant != nearest(name, known) {
			t.Fatalf("%s: nearest is %q", name, meant)
		}
		if d := editDistance(name, meant); d != editDistance(meant, name) || d > max(len(name), len(meant)) {
			t.Fatalf("%s and %s: distance %d", name, meant, d)
		}
	})
}

// simLikeRegistration is a backend with sim's variables, by name only.
func simLikeRegistration() driver.Registration {
	return driver.Registration{Name: "sim", Unavailable: "names only", Env: []driver.EnvVar{
		{Name: "GPUINIT_SIM_DEVICES"}, {Name: "GPUINIT_SIM_INIT_DELAY"}, {Name: "GPUINIT_SIM_FAIL"}}}
}
