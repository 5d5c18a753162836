package childtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Build is one go build of a main package, for BinaryOf.
type Build struct {
	Dir     string   // where go build runs (go build -C Dir); "" is the test's working directory
	Package string   // the main package, relative to Dir; "" is "."
	Env     []string // added to the build's environment, such as CGO_ENABLED=0
	Flags   []string // go build flags, such as "-tags", "cudalink"
}

// built is what BinaryOf has built in this test binary, by build.
var built struct {
	mu   sync.Mutex // protects bins
	bins map[string]binary
}

// shared is the folder this test binary's tests share, for what is built
// once and read by all: made at the first TempDir, removed by Main.
var shared struct {
	mu      sync.Mutex // protects following fields
	dir     string
	err     error
	inMain  bool // Main runs the tests: it will remove dir
	removed bool
}

// TempDir returns a folder that every test of this test binary shares,
// for what is built once and only read after (a binary, a fake library).
// Main removes it when the tests end, so a package that calls TempDir
// runs its tests with Main; TempDir fails t otherwise, rather than leave
// the folder behind. Safe from parallel tests.
func TempDir(t testing.TB) string {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.inMain {
		t.Fatal("childtest.TempDir: the package's TestMain must run the tests with childtest.Main, which removes the folder")
	}
	if shared.dir == "" && shared.err == nil {
		shared.dir, shared.err = os.MkdirTemp("", "childtest-shared-")
	}
	if shared.err != nil {
		t.Fatalf("childtest.TempDir: %v", shared.err)
	}
	return shared.dir
}

type binary struct {
	path string
	out  []byte // go build's output, for a failed build
	err  error
}

// Binary builds the main package in the test's working directory with go
// build and flags (say "-tags", "cudalink"); see BinaryOf.
func Binary(t testing.TB, flags ...string) string {
	t.Helper()
	return BinaryOf(t, Build{Flags: flags})
}

// BinaryOf runs b the first time it is asked for in this test binary, and
// returns the binary's path; later calls with the same b get the same
// binary, or the same failure, without building again. Tests that run a
// command many times share one build this way, and so do the modules: the
// root module's tests build their own commands, and the nested modules
// (build, deploy) build gpuprobe with Build{Dir: "..", Package:
// "./cmd/gpuprobe"}. The binary lives in a folder that Main removes when the
// tests end. Safe from parallel tests.
func BinaryOf(t testing.TB, b Build) string {
	t.Helper()
	built.mu.Lock()
	defer built.mu.Unlock()
	key := strings.Join([]string{b.Dir, b.Package, strings.Join(b.Env, "\x01"), strings.Join(b.Flags, "\x01")}, "\x00")
	bin, ok := built.bins[key]
	if !ok {
		bin = build(TempDir(t), b)
		if built.bins == nil {
			built.bins = map[string]binary{}
		}
		built.bins[key] = bin
	}
	if bin.err != nil {
		t.Fatalf("go build %s %s: %v\n%s", strings.Join(b.Flags, " "), b.Package, bin.err, bin.out)
	}
	return bin.path
}

// build runs go build into dir; built.mu is held, so that parallel callers
// wait for one build instead of starting their own.
func build(dir string, b Build) binary {
	pkg, name := b.Package, filepath.Base(b.Package)
	if pkg == "" {
		wd, err := os.Getwd()
		if err != nil {
			return binary{err: err}
		}
		pkg, name = ".", filepath.Base(wd)
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d", name, len(built.bins)))
	args := []string{"build"}
	if b.Dir != "" {
		args = append(args, "-C", b.Dir)
	}
	args = append(append(append(args, "-o", path), b.Flags...), pkg)
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), b.Env...)
	out, err := cmd.CombinedOutput()
	return binary{path: path, out: out, err: err}
}

// Main runs the tests, removes the folder TempDir made (with what Binary,
// BinaryOf and fakedriver.Build built in it), and exits with the tests'
// status: the TestMain of packages that use them.
func Main(m *testing.M) {
	shared.mu.Lock()
	shared.inMain = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	if shared.dir != "" && !shared.removed {
		_ = os.RemoveAll(shared.dir)
		shared.removed = true
	}
	shared.mu.Unlock()
	os.Exit(code)
}
