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

// built is what Binary has built in this test binary, by go build arguments.
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
// build and args (say "-tags", "cudalink") the first time it is asked for in
// this test binary, and returns its path; later calls with the same args get
// the same binary, or the same failure, without building again. Tests that
// run a command many times share one build this way. The binary lives in a
// folder that Main removes when the tests end. Safe from parallel tests.
func Binary(t *testing.T, args ...string) string {
	t.Helper()
	built.mu.Lock()
	defer built.mu.Unlock()
	key := strings.Join(args, "\x00")
	b, ok := built.bins[key]
	if !ok {
		b = build(args)
		if built.bins == nil {
			built.bins = map[string]binary{}
		}
		built.bins[key] = b
	}
	if b.err != nil {
		t.Fatalf("go build %s: %v\n%s", strings.Join(args, " "), b.err, b.out)
	}
	return b.path
}

// build runs go build; built.mu is held, so that parallel callers wait for
// one build instead of starting their own.
func build(args []string) binary {
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "childtest-bin-")
		if err != nil {
			return binary{err: err}
		}
		built.dir = dir
	}
	wd, err := os.Getwd()
	if err != nil {
		return binary{err: err}
	}
	path := filepath.Join(built.dir, fmt.Sprintf("%s-%d", filepath.Base(wd), len(built.bins)))
	cmd := exec.Command("go", append(append([]string{"build", "-o", path}, args...), ".")...)
	out, err := cmd.CombinedOutput()
	return binary{path: path, out: out, err: err}
}

// Main runs the tests, removes what Binary built, and exits with the tests'
// status: a TestMain for packages that use Binary.
func Main(m *testing.M) {
	code := m.Run()
	built.mu.Lock()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	built.mu.Unlock()
	os.Exit(code)
}
