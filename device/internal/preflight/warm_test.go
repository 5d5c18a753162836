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
	t.Setenv("PREFLIGHT_TEST_SET_AFTER_THE_START", "yes")
	t.Setenv("PREFLIGHT_TEST_NOT_UTF8", "a\xffb")

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
	if o.Backend != "cuda" || string(o.Dir) != dir {
		t.Errorf("orders = backend %q, folder %q: want cuda, %s", o.Backend, o.Dir, dir)
	}
	env := map[string]bool{}
	for _, kv := range o.Env {
		env[string(kv)] = true
	}
	for _, want := range []string{"PREFLIGHT_TEST_SET_AFTER_THE_START=yes", "PREFLIGHT_TEST_NOT_UTF8=a\xffb",
		"GPUINIT_PREFLIGHT=off", EnvChild + "=cuda", "GOMAXPROCS=1"} {
		if !env[want] {
			t.Errorf("the orders' environment lacks %q", want)
		}
	}
	if _, err := w.Run(context.Background(), c); err == nil {
		t.Error("a second Run used the child again")
	}
}

// pidsOf reads the pids a test's children appended to path, one a line.
func pidsOf(path string) []int {
	b, _ := os.ReadFile(path)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestAPrestartedChildThatCannotTakeOrdersMakesWayForAColdOne: a child that
// died while it waited never touched a driver, and one that answered
// without its orders is a program that does not wait for them. Either way
// Run starts a cold child, and returns what that one says.
func TestAPrestartedChildThatCannotTakeOrdersMakesWayForAColdOne(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		check        func(t *testing.T, err error)
	}{
		{"it died", "echo 'the driver library said no' >&2; exit 7", func(t *testing.T, err error) {
			var na *NoAnswer
			if !errors.As(err, &na) || na.ExitCode != 7 || na.Hung || !strings.Contains(na.Stderr, "the driver library said no") {
				t.Fatalf("err = %#v, want the cold child's exit 7 and its words", err)
			}
		}},
		{"it answered without orders", `echo '{"schema":"` + schema + `","backend":""}' >&3`, func(t *testing.T, err error) {
			if err == nil || !strings.Contains(err.Error(), `reported on backend "", not "hip"`) {
				t.Fatalf("err = %v, want the cold child's answer refused for its backend", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pids")
			c := Child{Command: []string{"sh", "-c", "echo $$ >>" + pidFile + "; " + tc.script}, Deadline: 30 * time.Second}
			w, err := Prestart(c)
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "it died" {
				waitForFile(t, pidFile)
				for !w.s.p.Exited() { // the state the reaper exposes
					time.Sleep(time.Millisecond)
				}
			}
			c.Backend, c.Attempt = "hip", 2
			_, err = w.Run(context.Background(), c)
			tc.check(t, err)
			if pids := pidsOf(pidFile); len(pids) != 2 {
				t.Errorf("children started: %v, want the pre-started one and a cold one", pids)
			}
		})
	}
}

// TestAPrestartedGoChildChecksWithItsOrders: this test binary, pre-started
// as a child, serves the preflight (TestMain). Its check reports the folder
// and a variable as it sees them: those of Run's moment, not its start's.
func TestAPrestartedGoChildChecksWithItsOrders(t *testing.T) {
	c := Child{Command: []string{os.Args[0], "-test.run=^$"}, Deadline: 30 * time.Second}
	t.Setenv(envSaid, "at the start")
	w, err := Prestart(c)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv(envSaid, "at Run")
	c.Backend, c.Attempt = "sim", 1
	rep, err := w.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{dir, "at Run"}; !slices.Equal(rep.Devices, want) {
		t.Errorf("the child saw %q, want %q", rep.Devices, want)
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
