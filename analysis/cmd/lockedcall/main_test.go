package main_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A module with one finding, as a user would run the command on it.
const userModule = `package user

import "sync"

type Registry struct {
	mu      sync.Mutex
	openers map[string]func() error
}

func (r *Registry) Open(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.openers[name]()
}
`

// TestCommand builds lockedcall and runs it the ways the README gives:
// standalone (file:line:col: message on stdout, exit 3), standalone with
// -json (go vet -json's shape, on stdout) and as go vet's tool (exit 1).
func TestCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs go vet")
	}
	bin := filepath.Join(t.TempDir(), "lockedcall")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "go.mod"), "module example.com/user\n\ngo 1.26\n")
	writeFile(t, filepath.Join(dir, "user.go"), userModule)
	want := regexp.MustCompile(`user\.go:13:9: call of r\.openers\[name\] \(a map or slice element\) while r\.mu is held; if r\.openers\[name\] re-enters, this deadlocks`)

	for _, run := range []struct {
		name     string
		args     []string
		wantCode int
		stdout   bool // the findings are on stdout, not stderr
	}{
		{"standalone", []string{bin, "./..."}, 3, true},
		{"go vet", []string{"go", "vet", "-vettool=" + bin, "./..."}, 1, false},
	} {
		stdout, stderr, code := runIn(t, dir, run.args...)
		if code != run.wantCode {
			t.Errorf("%s: exit status %d, want %d\n%s%s", run.name, code, run.wantCode, stdout, stderr)
		}
		out := stderr
		if run.stdout {
			out = stdout
		}
		if !want.Match(out) {
			t.Errorf("%s: output does not match %s:\nstdout:\n%s\nstderr:\n%s", run.name, want, stdout, stderr)
		}
	}

	// The standard library's one deadlock by design stays reported: a
	// sync.Once whose function calls Do on the same Once.
	stdout, stderr, code := runIn(t, dir, bin, "sync")
	if code != 3 || !regexp.MustCompile(`sync/once\.go:\d+:\d+: call of f \(a parameter\) while o\.m is held`).Match(stdout) {
		t.Errorf("sync: exit status %d, want 3 and the finding in sync.(*Once).doSlow\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	stdout, stderr, code = runIn(t, dir, bin, "-json", "./...")
	if code != 0 {
		t.Fatalf("-json: exit status %d\n%s", code, stderr)
	}
	var report map[string]map[string][]struct{ Posn, Message string }
	if err := json.Unmarshal(stdout, &report); err != nil {
		t.Fatalf("-json: %v\n%s", err, stdout)
	}
	diags := report["example.com/user"]["lockedcall"]
	if len(diags) != 1 || !strings.HasSuffix(diags[0].Posn, "user.go:13:9") || !want.MatchString("user.go:13:9: "+diags[0].Message) {
		t.Errorf("-json: got %+v, want the one finding at user.go:13:9", report)
	}
}

// runIn runs a command in dir and returns its output and exit status.
func runIn(t *testing.T, dir string, args ...string) (stdout, stderr []byte, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.Bytes(), errOut.Bytes(), code
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReentryDeadlocks runs, in a child, each program for which lockedcall
// proves a re-entry, and sees it die of that deadlock, beside the finding:
// issue 31's cache (lockedcall's testdata reentry/internal/cache and
// reentry/cmd/app) and issue 39's forms (testdata forms/*, each form's
// program with its // want comment). The quiet/ program of each form, the
// same with the re-entry removed, runs to its end and has no finding.
func TestReentryDeadlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs programs that deadlock")
	}
	bin := filepath.Join(t.TempDir(), "lockedcall")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	testdata := filepath.Join("..", "..", "lockedcall", "testdata", "src")

	t.Run("issue31", func(t *testing.T) {
		dir := t.TempDir()
		for _, pkg := range []string{filepath.Join("internal", "cache"), filepath.Join("cmd", "app")} {
			copyDir(t, filepath.Join(testdata, "reentry", pkg), filepath.Join(dir, pkg))
		}
		writeFile(t, filepath.Join(dir, "go.mod"), "module reentry\n\ngo 1.26\n")
		expectDeadlock(t, dir, "./cmd/app")
		stdout, stderr, code := runIn(t, dir, bin, "./...")
		want := regexp.MustCompile(`cmd/app/main\.go:14:6: call of cache\.New passes a func literal, which package cache calls while c\.mu is held \(cache\.go:27\), and it locks it again; deadlocks if it runs: Get → c\.loader → \(main's closure\) → Get → c\.mu\.Lock\n`)
		if code != 3 || !want.Match(stdout) || bytes.Count(stdout, []byte("\n")) != 1 {
			t.Errorf("lockedcall ./...: exit status %d, want 3 and the one finding %s\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
		}
	})

	t.Run("forms", func(t *testing.T) {
		dir := t.TempDir()
		forms, err := os.ReadDir(filepath.Join(testdata, "forms"))
		if err != nil {
			t.Fatal(err)
		}
		if len(forms) == 0 {
			t.Fatal("no forms under testdata/src/forms")
		}
		for _, f := range forms {
			name := f.Name()
			copyDir(t, filepath.Join(testdata, "forms", name), filepath.Join(dir, name))
			copyDir(t, filepath.Join(testdata, "forms", name, "quiet"), filepath.Join(dir, name, "quiet"))
		}
		writeFile(t, filepath.Join(dir, "go.mod"), "module forms\n\ngo 1.26\n")
		stdout, stderr, code := runIn(t, dir, bin, "./...")
		if code != 3 {
			t.Errorf("lockedcall ./...: exit status %d, want 3\nstderr:\n%s", code, stderr)
		}
		findings := strings.Split(strings.TrimSuffix(string(stdout), "\n"), "\n")
		if len(findings) != len(forms) {
			t.Errorf("lockedcall ./...: %d findings, want one for each of the %d forms:\n%s", len(findings), len(forms), stdout)
		}
		for _, f := range forms {
			name := f.Name()
			t.Run(name, func(t *testing.T) {
				line, want := wantComment(t, filepath.Join(dir, name, "main.go"))
				at := fmt.Sprintf("%s/main.go:%d:", name, line)
				found := false
				for _, fd := range findings {
					if rest, ok := strings.CutPrefix(fd, at); ok {
						_, msg, _ := strings.Cut(rest, ": ")
						found = want.MatchString(msg)
					}
				}
				if !found {
					t.Errorf("no finding at %s matching %s:\n%s", at, want, stdout)
				}
				expectDeadlock(t, dir, "./"+name)
				out, errOut, code := runIn(t, dir, "go", "run", "./"+name+"/quiet")
				if code != 0 {
					t.Errorf("go run ./%s/quiet: exit status %d, want 0\nstdout:\n%s\nstderr:\n%s", name, code, out, errOut)
				}
			})
		}
	})
}

// expectDeadlock runs a program with go run in dir and expects the
// runtime's report of a deadlock.
func expectDeadlock(t *testing.T, dir, pkg string) {
	t.Helper()
	stdout, stderr, code := runIn(t, dir, "go", "run", pkg)
	if code == 0 || !bytes.Contains(stderr, []byte("fatal error: all goroutines are asleep - deadlock!")) {
		t.Errorf("go run %s: exit status %d, want the runtime's deadlock\nstdout:\n%s\nstderr:\n%s", pkg, code, stdout, stderr)
	}
}

// wantComment returns the line of the one // want comment in a file and its
// pattern, as analysistest reads a back-quoted one.
func wantComment(t *testing.T, file string) (int, *regexp.Regexp) {
	t.Helper()
	content, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	comment := regexp.MustCompile("// want `([^`]*)`")
	for i, l := range strings.Split(string(content), "\n") {
		if m := comment.FindStringSubmatch(l); m != nil {
			return i + 1, regexp.MustCompile(m[1])
		}
	}
	t.Fatalf("%s has no // want comment", file)
	return 0, nil
}

// copyDir copies the files of one directory, not its subdirectories.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		content, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(to, e.Name()), string(content))
	}
}
