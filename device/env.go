package device

import (
	"fmt"
	"os"
	"strings"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/hostfs"
	"github.com/gpuinit/gpuinit/device/internal/preflight"
)

// deviceEnv are the variables package device reads itself.
var deviceEnv = []driver.EnvVar{
	{Name: envBackend},
	{Name: envPreflight, Check: func(string) error { _, err := preflightFromEnv(nil); return err }},
	{Name: hostfs.EnvDevRoot, Check: directory(hostfs.EnvDevRoot)},
	{Name: hostfs.EnvSysfsRoot, Check: directory(hostfs.EnvSysfsRoot)},
	{Name: hostfs.EnvProcRoot, Check: directory(hostfs.EnvProcRoot)},
}

// directory checks that a variable names a directory.
func directory(name string) func(string) error {
	return func(v string) error {
		if info, err := os.Stat(v); err != nil || !info.IsDir() {
			return fmt.Errorf("%w: %s=%q names no directory: unset it to read the host's own", ErrBadSetting, name, v)
		}
		return nil
	}
}

// checkEnv checks the GPUINIT_* variables that are set. They are package
// device's own, and those of regs, the backends a Runtime may open. A value
// a check refuses is an error naming the variable. So is a variable whose
// name is a near miss of a known one: a typo that would be ignored. Some
// variables are no settings of a user's and are not checked. They are those
// of the fake drivers and of tests (GPUINIT_FAKE_*, GPUINIT_*_TEST_*), and
// the preflight child's marker.
func (g *Registry) checkEnv(regs []driver.Registration) error {
	vars := append([]driver.EnvVar(nil), deviceEnv...)
	for _, reg := range regs {
		vars = append(vars, reg.Env...)
	}
	known := map[string]bool{preflight.EnvChild: true}
	for _, reg := range g.registrations() {
		for _, v := range reg.Env {
			known[v.Name] = true
		}
	}
	for _, v := range vars {
		known[v.Name] = true
		value, set := os.LookupEnv(v.Name)
		if !set || strings.TrimSpace(value) == "" || v.Check == nil {
			continue
		}
		if err := v.Check(strings.TrimSpace(value)); err != nil {
			return err
		}
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "GPUINIT_") || known[name] || strings.HasPrefix(name, "GPUINIT_FAKE_") || strings.Contains(name, "_TEST_") {
			continue
		}
		for k := range known {
			if editDistance(name, k) <= 2 {
				return fmt.Errorf("%w: %s is set, but gpuinit reads no such variable: did you mean %s?", ErrBadSetting, name, k)
			}
		}
	}
	return nil
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
