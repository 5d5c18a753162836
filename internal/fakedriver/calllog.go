package fakedriver

import (
	"os"
	"strings"
	"testing"
)

// CallLog is the file a fake library logs its calls to, one line each (the
// call's name, then its arguments), as its GPUINIT_FAKE_*_LOG variable names.
type CallLog string

// NewCallLog returns a log file in a folder of t's.
func NewCallLog(t testing.TB) CallLog {
	t.Helper()
	return CallLog(t.TempDir() + "/calls.log")
}

// Reset empties the log, so that what a child logs next is all it holds.
func (l CallLog) Reset(t testing.TB) {
	t.Helper()
	if err := os.WriteFile(string(l), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Lines returns the calls logged, in order: those that start with one of
// prefixes, or all of them with none.
func (l CallLog) Lines(t testing.TB, prefixes ...string) []string {
	t.Helper()
	b, err := os.ReadFile(string(l))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(line, p) {
				out = append(out, line)
				break
			}
		}
		if len(prefixes) == 0 {
			out = append(out, line)
		}
	}
	return out
}

// vendorLibraries are the GPU libraries a backend may load, by name prefix.
var vendorLibraries = []string{"libcuda", "libcurand", "libnvidia-ml", "libamdhip64", "libhiprand", "librocrand", "librocm_smi64"}

// MappedVendorLibraries returns the GPU vendor libraries (real or fake) this
// process has mapped, from /proc/self/maps: a laziness test expects none
// before the first Init.
func MappedVendorLibraries(t testing.TB) []string {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	var mapped []string
	for _, lib := range vendorLibraries {
		if strings.Contains(string(maps), "/"+lib) {
			mapped = append(mapped, lib)
		}
	}
	return mapped
}
