// Package fakedriver builds fake vendor driver libraries for tests, from C
// sources kept here, with the system's C compiler: libcuda, libcurand,
// libnvidia-ml, libamdhip64 and libhiprand, which answer like a host with two
// GPUs and are strict where the real libraries are. With them, the cgo loading and query paths run in CI, where no
// GPU exists. Each library documents the environment variables that set its
// answers; tests set them in child processes, since a driver once loaded
// stays loaded.
package fakedriver

import (
	"embed"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

//go:embed csrc/*.c csrc/*.h
var sources embed.FS

// Library is one fake library to build.
type Library struct {
	Source  string   // the C file here, e.g. "fakecuda.c"
	Soname  string   // the file name and DT_SONAME, e.g. "libcuda.so.1"
	Defines []string // extra -D flags, e.g. to leave a function out
}

// The fake libraries.
var (
	CUDA   = Library{Source: "fakecuda.c", Soname: "libcuda.so.1"}
	CURAND = Library{Source: "fakecurand.c", Soname: "libcurand.so.10"}
	NVML   = Library{Source: "fakenvml.c", Soname: "libnvidia-ml.so.1"}
	// HIP is a ROCm 6 libamdhip64; HIPRAND is built into the same directory
	// by BuildInto, since hipRAND is looked for beside libamdhip64.
	HIP     = Library{Source: "fakehip.c", Soname: "libamdhip64.so.6"}
	HIPRAND = Library{Source: "fakehiprand.c", Soname: "libhiprand.so.1"}
	// ROCMSMI is ROCm SMI's librocm_smi64, its event notifications: a
	// Debian 12 (5.2.3) one unless GPUINIT_FAKE_RSMI_LAYOUT says otherwise.
	ROCMSMI = Library{Source: "fakerocmsmi.c", Soname: "librocm_smi64.so.7"}
)

// Build compiles lib into a fresh directory of t's and returns the library's
// path. It skips the test if there is no C compiler.
func Build(t testing.TB, lib Library) string {
	t.Helper()
	return BuildInto(t, t.TempDir(), lib)
}

// BuildInto is Build into dir.
func BuildInto(t testing.TB, dir string, lib Library) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) to build the fake %s", cc, lib.Soname)
	}
	src, err := sources.ReadFile("csrc/" + lib.Source)
	if err != nil {
		t.Fatalf("fakedriver: %v", err)
	}
	srcDir := t.TempDir()
	cfile := filepath.Join(srcDir, lib.Source)
	if err := os.WriteFile(cfile, src, 0o644); err != nil {
		t.Fatal(err)
	}
	headers, _ := fs.Glob(sources, "csrc/*.h")
	for _, h := range headers {
		b, _ := sources.ReadFile(h)
		if err := os.WriteFile(filepath.Join(srcDir, filepath.Base(h)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, lib.Soname)
	args := []string{"-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-Wl,-soname," + lib.Soname, "-o", out}
	for _, d := range lib.Defines {
		args = append(args, "-D"+d)
	}
	args = append(args, cfile, "-lpthread", "-ldl")
	if msg, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("fakedriver: building %s: %v\n%s", lib.Soname, err, msg)
	}
	return out
}
