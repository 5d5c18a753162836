package device

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/host"
	"github.com/gpuinit/gpuinit/device/internal/preflight"
)

// deviceEnv are the variables package device reads itself.
var deviceEnv = []driver.EnvVar{
	{Name: envBackend, Doc: `the backend that Open("") opens: auto, cuda, hip or sim`, Default: "auto"},
	{Name: envPreflight, Doc: "the preflight (device.Preflight): off, on, or each child's deadline such as 30s; it overrides only what it names of the code's own setting",
		Default: "the code's setting: off unless the code turns it on",
		Check:   func(string) error { _, err := preflightFromEnv(nil); return err }},
	{Name: host.EnvDevRoot, Doc: "the directory that holds the host's device nodes, for a container that mounts them elsewhere",
		Default: "/dev", Check: directory(host.EnvDevRoot)},
	{Name: host.EnvSysfsRoot, Doc: "the directory that holds the host's sysfs (the KFD topology, the PCI devices)",
		Default: "/sys", Check: directory(host.EnvSysfsRoot)},
	{Name: host.EnvProcRoot, Doc: "the directory that holds the host's procfs (/proc/driver/nvidia, /proc/meminfo)",
		Default: "/proc", Check: directory(host.EnvProcRoot)},
}

// notSettings are the GPUINIT_* variables that are no settings of a user's,
// which Open neither checks nor refuses, and why. The test children's markers
// are listed by exact name (TestEveryTestVariableIsExempt keeps the list
// whole), so that a user's misspelt setting is never taken for one of them.
// Besides these, every GPUINIT_FAKE_* variable is exempt: the fake driver
// libraries the tests build read them, and no setting starts so.
var notSettings = map[string]string{
	preflight.EnvChild:  "set by gpuinit on its preflight child, naming the backend to check (empty: it waits for its orders)",
	"GPUINIT_SDK_CACHE": "read by build/fetch-cuda-sdk.sh, where it keeps the CUDA SDK it fetches",

	"GPUINIT_CUDA_TEST_CHILD":            "a test child's marker (device/cuda)",
	"GPUINIT_HIP_TEST_CHILD":             "a test child's marker (device/hip)",
	"GPUINIT_LAZY_TEST_CHILD":            "a test child's marker (lazy)",
	"GPUINIT_LAZY_TEST_DISCIPLINE":       "a test child's setting (lazy)",
	"GPUINIT_LAZY_TEST_SCENARIO":         "a test child's setting (lazy)",
	"GPUINIT_DEVICE_TEST_CHILD_DOES":     "a test child's setting (device)",
	"GPUINIT_DEVICE_TEST_COUNTER":        "a test child's setting (device)",
	"GPUINIT_DEVICE_TEST_TIMES":          "a test child's setting (device)",
	"GPUINIT_DEVICE_TEST_REMOVED_BINARY": "a test child's marker (device)",
	"GPUINIT_DRA_CUDA_TEST_CHILD":        "a test child's marker (dra/drahealth)",
}

// fakePrefix starts the variables of the fake driver libraries.
const fakePrefix = "GPUINIT_FAKE_"

// directory checks that a variable names a directory.
func directory(name string) func(string) error {
	return func(v string) error {
		if info, err := os.Stat(v); err != nil || !info.IsDir() {
			return fmt.Errorf("device: %s=%q names no directory: unset it to read the host's own: %w", name, v, ErrBadSetting)
		}
		return nil
	}
}

// Settings lists every GPUINIT_* variable that gpuinit reads through g, with
// what it sets and its default: package device's own, then each registered
// backend's ([driver.Registration].Env), backends in name order. It is the
// one table of the settings: Open checks the environment against it, and
// README.md prints it. Safe for concurrent use.
func (g *Registry) Settings() []driver.EnvVar {
	regs := g.registrations()
	slices.SortFunc(regs, func(a, b driver.Registration) int { return cmp.Compare(a.Name, b.Name) })
	vars := slices.Clone(deviceEnv)
	for _, reg := range regs {
		vars = append(vars, reg.Env...)
	}
	return vars
}

// checkEnv checks the GPUINIT_* variables that are set. Each value package
// device or one of regs (the backends a Runtime may open) reads must pass its
// check, and every name must be one that Settings lists, or one of
// notSettings, or start with GPUINIT_FAKE_. Any other is a mistake that
// would be ignored (a misspelt or invented name): an error naming it, with
// the known name meant where one is near.
func (g *Registry) checkEnv(regs []driver.Registration) error {
	vars := slices.Clone(deviceEnv)
	for _, reg := range regs {
		vars = append(vars, reg.Env...)
	}
	for _, v := range vars {
		value, set := os.LookupEnv(v.Name)
		if !set || strings.TrimSpace(value) == "" || v.Check == nil {
			continue
		}
		if err := v.Check(strings.TrimSpace(value)); err != nil {
			return err
		}
	}
	var known []string
	for _, v := range g.Settings() {
		known = append(known, v.Name)
	}
	var unknown []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GPUINIT_") && !slices.Contains(known, name) &&
			notSettings[name] == "" && !strings.HasPrefix(name, fakePrefix) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown) // the first in name order, whatever the environment's order
	name := unknown[0]
	if meant := nearest(name, known); meant != "" {
		return fmt.Errorf("device: %s is set, but gpuinit reads no such variable (did you mean %s?): %w", name, meant, ErrBadSetting)
	}
	return fmt.Errorf("device: %s is set, but gpuinit reads no such variable%s: unset it (README.md, \"Settings\", lists those it reads): %w",
		name, g.missingBackends(), ErrBadSetting)
}

// missingBackends names the shipped backends not registered with g, whose
// variables g does not know, for a message: "" when all are there.
func (g *Registry) missingBackends() string {
	var missing []string
	for name := range shippedPackages {
		if _, ok := g.lookup(name); !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	slices.Sort(missing)
	return " (nor does this binary have backend " + strings.Join(missing, " or ") + ", whose variables it would read)"
}

// nearest is the known name that name most likely misspells, or "". A name
// is near one within two edits, or one whose words (between underscores)
// are the other's with some left out or cut short, the first kept:
// GPUINIT_SIM_DELAY for
// GPUINIT_SIM_INIT_DELAY, GPUINIT_CUDA_LIB for GPUINIT_CUDA_LIBRARY,
// GPUINIT_PREFLIGHT_DEADLINE for GPUINIT_PREFLIGHT. The nearest by edit
// distance wins, then the first in name order.
func nearest(name string, known []string) string {
	best, bestDist := "", 0
	for _, k := range slices.Sorted(slices.Values(known)) {
		d := editDistance(name, k)
		if d > 2 && !sameWords(name, k) {
			continue
		}
		if best == "" || d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// sameWords reports whether the words of a's and b's names after GPUINIT_
// are, for the shorter list, each in the longer list, in order, whole or cut
// short to three letters or more, the first word (what the variable belongs
// to: SIM, CUDA, PREFLIGHT) first.
func sameWords(a, b string) bool {
	x := strings.Split(strings.TrimPrefix(a, "GPUINIT_"), "_")
	y := strings.Split(strings.TrimPrefix(b, "GPUINIT_"), "_")
	if len(x) > len(y) {
		x, y = y, x
	}
	if !wordMatch(x[0], y[0]) {
		return false
	}
	j := 0
	for _, w := range x {
		for j < len(y) && !wordMatch(w, y[j]) {
			j++
		}
		if j == len(y) {
			return false
		}
		j++
	}
	return true
}

// wordMatch reports whether u and v are one word, or one starts the other
// and is three letters or more.
func wordMatch(u, v string) bool {
	if len(u) > len(v) {
		u, v = v, u
	}
	return u == v || len(u) >= 3 && strings.HasPrefix(v, u)
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
