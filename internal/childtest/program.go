package childtest

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// programEnv marks a process that runs its package's main: a program that
// re-executes itself (gpuprobe's scenarios, through os.Executable, which
// names the test binary) runs main again, not the tests.
const programEnv = "CHILDTEST_PROGRAM"

// program is the name MainOrProgram was given: Program's link is named so.
var program string

// MainOrProgram is the TestMain of a package main whose tests run the
// program (see Program). Started as the program, under name or by one, this
// test binary runs main and exits with status 0 when main returns, as the
// program would. Otherwise it runs the tests with Main.
func MainOrProgram(m *testing.M, name string, main func()) {
	if filepath.Base(os.Args[0]) == name || os.Getenv(programEnv) != "" {
		_ = os.Setenv(programEnv, name)
		// The program's flags alone: the testing package's are registered
		// on the command line already.
		flag.CommandLine = flag.NewFlagSet(os.Args[0], flag.ExitOnError)
		main()
		os.Exit(0)
	}
	program = name
	Main(m)
}

// Program returns the path of the package's program: a link to this test
// binary, named as MainOrProgram was told, which starts as that program. A
// test that runs its package's program then needs no go build: the program
// is this binary, built once with the tests. Under the race detector it is
// Binary's go build instead. A program with the race runtime runs and
// starts slower (a race leg took 35 s where it took 20), and the tests of
// the program's packages run with it there already. A test or benchmark
// that must run what go build makes, such as one that times the shipped
// binary's start, calls Binary. Program fails t unless the package's
// TestMain is MainOrProgram.
func Program(t testing.TB) string {
	t.Helper()
	if program == "" {
		t.Fatal("childtest.Program: the package's TestMain must be childtest.MainOrProgram, or the link would run the tests")
	}
	if raceBuilt {
		return Binary(t)
	}
	built.mu.Lock()
	defer built.mu.Unlock()
	key := "\x00program"
	bin, ok := built.bins[key]
	if !ok {
		bin = link(TempDir(t), program)
		if built.bins == nil {
			built.bins = map[string]binary{}
		}
		built.bins[key] = bin
	}
	if bin.err != nil {
		t.Fatalf("childtest.Program: %v", bin.err)
	}
	return bin.path
}

// link makes dir/name a link to this test binary: a hard link where the
// file system allows, else a symbolic one.
func link(dir, name string) binary {
	self, err := os.Executable()
	if err != nil {
		return binary{err: err}
	}
	path := filepath.Join(dir, name)
	if os.Link(self, path) == nil {
		return binary{path: path}
	}
	if err := os.Symlink(self, path); err != nil {
		return binary{err: err}
	}
	return binary{path: path}
}
