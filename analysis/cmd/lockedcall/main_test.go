package main_test

import (
	"bytes"
	"encoding/json"
	"errors"
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

// TestReentryDeadlocks runs issue 31's program (lockedcall's testdata
// reentry/internal/cache and reentry/cmd/app, as a module of their own) in
// a child and sees it die of the deadlock that lockedcall reports for it.
func TestReentryDeadlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs a program that deadlocks")
	}
	bin := filepath.Join(t.TempDir(), "lockedcall")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	src := filepath.Join("..", "..", "lockedcall", "testdata", "src", "reentry")
	for _, pkg := range []string{filepath.Join("internal", "cache"), filepath.Join("cmd", "app")} {
		copyDir(t, filepath.Join(src, pkg), filepath.Join(dir, pkg))
	}
	writeFile(t, filepath.Join(dir, "go.mod"), "module reentry\n\ngo 1.26\n")

	stdout, stderr, code := runIn(t, dir, "go", "run", "./cmd/app")
	if code == 0 || !bytes.Contains(stderr, []byte("fatal error: all goroutines are asleep - deadlock!")) {
		t.Errorf("go run ./cmd/app: exit status %d, want the runtime's deadlock\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	stdout, stderr, code = runIn(t, dir, bin, "./...")
	want := regexp.MustCompile(`cmd/app/main\.go:14:6: call of cache\.New passes a func literal, which package cache calls while c\.mu is held \(cache\.go:27\), and it locks it again; deadlocks if it runs: Get → c\.loader → \(main's closure\) → Get → c\.mu\.Lock\n`)
	if code != 3 || !want.Match(stdout) || bytes.Count(stdout, []byte("\n")) != 1 {
		t.Errorf("lockedcall ./...: exit status %d, want 3 and the one finding %s\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
}

// copyDir copies the files of one directory.
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
		content, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(to, e.Name()), string(content))
	}
}
