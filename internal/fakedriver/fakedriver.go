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
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpuinit/gpuinit/internal/childtest"
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

// built is what Build has compiled in this test binary, by library. Each
// library compiles once, and two libraries compile at once: parallel tests
// that need the same one wait for its compile only.
var built struct {
	mu   sync.Mutex // protects libs, not the compiles
	libs map[string]func() (string, error)
}

// Build returns the path of lib compiled for this test binary. The first
// call puts it into the folder the binary's tests share (childtest.TempDir,
// which childtest.Main removes): a copy of the one this machine compiled
// before, or a new compile (see compileCached). Later calls get the same
// file, or the same failure, without compiling again. Tests only read
// the file: what a fake does is set by the environment of the process
// that loads it. Build skips the test if there is no C compiler. Safe from
// parallel tests.
func Build(t testing.TB, lib Library) string {
	t.Helper()
	cc := compiler(t)
	key := strings.Join(append([]string{lib.Source, lib.Soname}, lib.Defines...), "\x00")
	shared := childtest.TempDir(t)
	built.mu.Lock()
	compiled, ok := built.libs[key]
	if !ok {
		dir := filepath.Join(shared, fmt.Sprintf("fake-%d", len(built.libs)))
		compiled = sync.OnceValues(func() (string, error) { return compileCached(cc, dir, lib) })
		if built.libs == nil {
			built.libs = map[string]func() (string, error){}
		}
		built.libs[key] = compiled
	}
	built.mu.Unlock()
	path, err := compiled()
	if err != nil {
		t.Fatalf("fakedriver: %v", err)
	}
	return path
}

// BuildInto puts lib, as Build compiled it, into dir, and returns its path
// there: for a library that another finds beside it (hipRAND beside
// libamdhip64), or a host's layout of its own. The file is a hard link to
// Build's, or a copy where dir is on another file system.
func BuildInto(t testing.TB, dir string, lib Library) string {
	t.Helper()
	from := Build(t, lib)
	to := filepath.Join(dir, lib.Soname)
	if err := os.Link(from, to); err != nil {
		b, rerr := os.ReadFile(from)
		if rerr != nil {
			t.Fatalf("fakedriver: %v", rerr)
		}
		if werr := os.WriteFile(to, b, 0o755); werr != nil {
			t.Fatalf("fakedriver: placing %s: %v (linking: %v)", lib.Soname, werr, err)
		}
	}
	return to
}

// compiler is the C compiler to build with; it skips t where there is none.
func compiler(t testing.TB) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) to build the fake drivers", cc)
	}
	return cc
}

// compileFlags are the flags every fake compiles with, before its soname,
// output and defines.
var compileFlags = []string{"-shared", "-fPIC", "-O1", "-Wall", "-Werror"}

// compile builds lib with cc into dir, with the headers beside its source.
func compile(cc, dir string, lib Library) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src, err := sources.ReadFile("csrc/" + lib.Source)
	if err != nil {
		return "", err
	}
	cfile := filepath.Join(dir, lib.Source)
	if err := os.WriteFile(cfile, src, 0o644); err != nil {
		return "", err
	}
	headers, _ := fs.Glob(sources, "csrc/*.h")
	for _, h := range headers {
		b, _ := sources.ReadFile(h)
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(h)), b, 0o644); err != nil {
			return "", err
		}
	}
	out := filepath.Join(dir, lib.Soname)
	args := append(append([]string{}, compileFlags...), "-Wl,-soname,"+lib.Soname, "-o", out)
	for _, d := range lib.Defines {
		args = append(args, "-D"+d)
	}
	args = append(args, cfile, "-lpthread", "-ldl")
	if msg, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", lib.Soname, err, msg)
	}
	return out, nil
}
