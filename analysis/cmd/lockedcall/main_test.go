package main_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// TestCommand builds lockedcall and runs it the two ways the README gives:
// standalone (file:line:col: message, exit 3) and as go vet's tool (exit 1).
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
	}{
		{"standalone", []string{bin, "./..."}, 3},
		{"go vet", []string{"go", "vet", "-vettool=" + bin, "./..."}, 1},
	} {
		cmd := exec.Command(run.args[0], run.args[1:]...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != run.wantCode {
			t.Errorf("%s: got %v, want exit status %d\n%s", run.name, err, run.wantCode, out)
		}
		if !want.Match(out) {
			t.Errorf("%s: output does not match %s:\n%s", run.name, want, out)
		}
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
