package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
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

// childTimeout bounds each program's run: a deadlock that the runtime does
// not detect (a goroutine with a pending timer keeps it from doing so) is
// caught as a hang when it expires.
const childTimeout = 30 * time.Second

// hangProgram deadlocks where the runtime cannot tell: its ticking goroutine
// keeps a timer pending. It shows that runChild catches a hang.
const hangProgram = `package main

import (
	"sync"
	"time"
)

func main() {
	go func() {
		for {
			time.Sleep(time.Hour)
		}
	}()
	var mu sync.Mutex
	mu.Lock()
	mu.Lock()
}
`

// TestReentryDeadlocks runs, in a child, each program for which lockedcall
// proves a re-entry, and sees it deadlock, beside the finding: issue 31's
// cache (lockedcall's testdata reentry/internal/cache and reentry/cmd/app)
// and issue 39's forms (testdata forms/*, each form's program with its
// // want comment). The quiet/ program of each form, the same with the
// re-entry removed, runs to its end and has no finding. All the programs
// are built by one go build into a temporary module; each runs under
// childTimeout, and a hang counts as a deadlock.
func TestReentryDeadlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs programs that deadlock")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("the go tool is not available to build the programs: %v", err)
	}
	tmp := t.TempDir()
	lc := filepath.Join(tmp, "lockedcall")
	if out, err := exec.Command("go", "build", "-o", lc, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	testdata := filepath.Join("..", "..", "lockedcall", "testdata", "src")
	forms, err := os.ReadDir(filepath.Join(testdata, "forms"))
	if err != nil {
		t.Fatal(err)
	}
	if len(forms) == 0 {
		t.Fatal("no forms under testdata/src/forms")
	}

	// One module, reentry, as issue 31's program imports it: its cache and
	// app, each form's program at <form>/ and its quiet copy at
	// quiet-<form>/, so that each binary has its own name, and the hang.
	dir := filepath.Join(tmp, "reentry")
	for _, pkg := range []string{filepath.Join("internal", "cache"), filepath.Join("cmd", "app")} {
		copyDir(t, filepath.Join(testdata, "reentry", pkg), filepath.Join(dir, pkg))
	}
	patterns := []string{"./cmd/...", "./internal/..."}
	for _, f := range forms {
		name := f.Name()
		copyDir(t, filepath.Join(testdata, "forms", name), filepath.Join(dir, name))
		copyDir(t, filepath.Join(testdata, "forms", name, "quiet"), filepath.Join(dir, "quiet-"+name))
		patterns = append(patterns, "./"+name, "./quiet-"+name)
	}
	writeFile(t, filepath.Join(dir, "go.mod"), "module reentry\n\ngo 1.26\n")
	if err := os.MkdirAll(filepath.Join(dir, "hang"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "hang", "main.go"), hangProgram)
	bins := filepath.Join(tmp, "bin") + string(filepath.Separator)
	if out, code := combined(t, dir, "go", "build", "-o", bins, "./..."); code != 0 {
		t.Fatalf("go build ./...: exit status %d\n%s", code, out)
	}

	t.Run("a hang is caught", func(t *testing.T) {
		if _, hung := runChild(t, filepath.Join(bins, "hang"), time.Second); !hung {
			t.Errorf("hang: ran to its end, or died, within its time, want a hang")
		}
	})

	stdout, stderr, code := runIn(t, dir, append([]string{lc}, patterns...)...)
	if code != 3 {
		t.Errorf("lockedcall: exit status %d, want 3\nstderr:\n%s", code, stderr)
	}
	findings := strings.Split(strings.TrimSuffix(string(stdout), "\n"), "\n")
	if want := len(forms) + 1; len(findings) != want {
		t.Errorf("lockedcall: %d findings, want %d: issue 31's and one for each form:\n%s", len(findings), want, stdout)
	}

	t.Run("issue31", func(t *testing.T) {
		want := regexp.MustCompile(`^cmd/app/main\.go:14:6: call of cache\.New passes a func literal, which package cache calls while c\.mu is held \(cache\.go:27\), and it locks it again; deadlocks if it runs: Get → c\.loader → \(main's closure\) → Get → c\.mu\.Lock$`)
		if !slices.ContainsFunc(findings, want.MatchString) {
			t.Errorf("lockedcall: no finding matching %s:\n%s", want, stdout)
		}
		expectDeadlock(t, filepath.Join(bins, "app"))
	})
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
			expectDeadlock(t, filepath.Join(bins, name))
			if out, hung := runChild(t, filepath.Join(bins, "quiet-"+name), childTimeout); hung || out.code != 0 {
				t.Errorf("quiet-%s: exit status %d (hung: %v), want 0\nstdout:\n%s\nstderr:\n%s", name, out.code, hung, out.stdout, out.stderr)
			}
		})
	}
}

// childRun is what a child program printed and its exit status.
type childRun struct {
	stdout, stderr []byte
	code           int
}

// runChild runs the program bin for at most timeout, and reports whether
// it was still running then (it is killed).
func runChild(t *testing.T, bin string, timeout time.Duration) (childRun, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, bin)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	run := childRun{stdout: out.Bytes(), stderr: errOut.Bytes()}
	if ctx.Err() != nil {
		return run, true
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		run.code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return run, false
}

// expectDeadlock runs a program in a child and expects the runtime's report
// of a deadlock, or a hang.
func expectDeadlock(t *testing.T, bin string) {
	t.Helper()
	out, hung := runChild(t, bin, childTimeout)
	if !hung && (out.code == 0 || !bytes.Contains(out.stderr, []byte("fatal error: all goroutines are asleep - deadlock!"))) {
		t.Errorf("%s: exit status %d, want the runtime's deadlock or a hang\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), out.code, out.stdout, out.stderr)
	}
}

// combined runs a command in dir and returns its combined output and exit
// status.
func combined(t *testing.T, dir string, args ...string) ([]byte, int) {
	t.Helper()
	stdout, stderr, code := runIn(t, dir, args...)
	return append(stdout, stderr...), code
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
