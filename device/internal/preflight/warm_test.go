package preflight

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitForFile waits until path holds something, and returns it.
func waitForFile(t *testing.T, path string) string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return string(b)
		}
	}
	t.Fatalf("%s stayed empty", path)
	return ""
}

// TestAPrestartedChildGetsItsOrdersWhenRun: the child runs before Run, and
// waits. Run gives it the backend, the environment of that moment (a
// variable set after the start included) and the folder, then judges it as
// Run judges a cold child: here, an exit without a report.
func TestAPrestartedChildGetsItsOrdersWhenRun(t *testing.T) {
	dir := t.TempDir()
	script := "echo $$ >started; cat <&4 >orders; echo '" + ArmedLine + "' >&2; exit 3"
	c := Child{Command: []string{"sh", "-c", script}, Deadline: 30 * time.Second, Env: []string{"GPUINIT_PREFLIGHT=off"}}
	t.Chdir(dir)
	w, err := Prestart(c)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	waitForFile(t, "started") // it runs before Run
	t.Setenv("GPUINIT_TEST_SET_AFTER_THE_START", "yes")

	c.Backend, c.Attempt = "cuda", 1
	if !w.Matches(c) {
		t.Fatal("Matches: a child of the same program, deadline and additions does not match")
	}
	_, err = w.Run(context.Background(), c)
	var na *NoAnswer
	if !errors.As(err, &na) || na.ExitCode != 3 || na.Hung || na.Backend != "cuda" || na.Attempt != 1 {
		t.Fatalf("err = %#v, want the child's exit 3, judged as cuda's attempt 1", err)
	}
	var o orders
	if err := json.Unmarshal([]byte(waitForFile(t, filepath.Join(dir, "orders"))), &o); err != nil {
		t.Fatal(err)
	}
	if o.Backend != "cuda" || o.Dir != dir {
		t.Errorf("orders = backend %q, folder %q: want cuda, %s", o.Backend, o.Dir, dir)
	}
	for _, want := range []string{"GPUINIT_TEST_SET_AFTER_THE_START=yes", "GPUINIT_PREFLIGHT=off", EnvChild + "=cuda", "GOMAXPROCS=1"} {
		if !slices.Contains(o.Env, want) {
			t.Errorf("the orders' environment lacks %s", want)
		}
	}
	if _, err := w.Run(context.Background(), c); err == nil {
		t.Error("a second Run used the child again")
	}
}

// TestAPrestartedChildThatDiedGivesNoAnswer: a child that exited before its
// orders is judged by its exit, as a cold child that died would be.
func TestAPrestartedChildThatDiedGivesNoAnswer(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := Child{Command: []string{"sh", "-c", "echo $$ >" + pidFile + "; echo 'the driver library said no' >&2; exit 7"},
		Deadline: 30 * time.Second}
	w, err := Prestart(c)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(waitForFile(t, pidFile)))
	for syscall.Kill(pid, 0) != syscall.ESRCH { // exited, and reaped
		time.Sleep(time.Millisecond)
	}
	c.Backend, c.Attempt = "hip", 2
	_, err = w.Run(context.Background(), c)
	var na *NoAnswer
	if !errors.As(err, &na) || na.ExitCode != 7 || na.Hung || !strings.Contains(na.Stderr, "the driver library said no") {
		t.Fatalf("err = %#v, want the child's exit 7 and its words", err)
	}
}

// TestAClosedPrestartedChildIsGone: Close kills the child and waits for it;
// Run then refuses. A child for other settings does not match.
func TestAClosedPrestartedChildIsGone(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := Child{Command: []string{"sh", "-c", "echo $$ >" + pidFile + "; exec sleep 60"}, Deadline: 30 * time.Second}
	w, err := Prestart(c)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(waitForFile(t, pidFile)))
	other := c
	other.Deadline = time.Second
	if w.Matches(other) {
		t.Error("a child of another deadline matches")
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Errorf("kill -0 after Close: %v, want ESRCH", err)
	}
	if _, err := w.Run(context.Background(), c); err == nil {
		t.Error("Run used a closed child")
	}
	if err := w.Close(context.Background()); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}
