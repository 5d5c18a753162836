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
	mu   sync.Mutex // protects following fields
	dir  string     // removed by Main
	bins map[string]binary
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
		bin = build(b)
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

// build runs go build; built.mu is held, so that parallel callers wait for
// one build instead of starting their own.
func build(b Build) binary {
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "childtest-bin-")
		if err != nil {
			return binary{err: err}
		}
		built.dir = dir
	}
	pkg, name := b.Package, filepath.Base(b.Package)
	if pkg == "" {
		wd, err := os.Getwd()
		if err != nil {
			return binary{err: err}
		}
		pkg, name = ".", filepath.Base(wd)
	}
	path := filepath.Join(built.dir, fmt.Sprintf("%s-%d", name, len(built.bins)))
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

// Main runs the tests, removes what BinaryOf built, and exits with the tests'
// status: a TestMain for packages that use Binary or BinaryOf.
func Main(m *testing.M) {
	code := m.Run()
	built.mu.Lock()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	built.mu.Unlock()
	os.Exit(code)
}
