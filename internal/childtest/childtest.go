// Package childtest runs one test function of the current test binary in a
// child process, for tests whose subject is process-wide: a driver library,
// once loaded, stays loaded, so each configuration of it gets a fresh process.
// The parent re-executes the binary with -test.run naming the child test and an
// environment variable set; the child test calls Child first, which skips it
// when it is not running as a child.
package childtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/internal/hangcheck"
)

// Timeout bounds one child.
const Timeout = 2 * time.Minute

// dumpGrace is how long a hung child has to write its goroutine dump after
// SIGQUIT: a Go child exits as soon as it has, so this only bounds one
// that cannot.
const dumpGrace = time.Minute

// Marker is the environment variable that tells a test binary it runs as a
// child, one per package: "GPUINIT_CUDA_TEST_CHILD".
type Marker string

// armedLine is what a child writes to its stderr once its test runs: the
// parent's timeout counts from there (hangcheck.Limits.Armed), not from the
// process's start, which a loaded machine can stretch by seconds.
const armedLine = "childtest: the child test runs"

// Child skips t unless this process is a child that m started. In a child,
// it tells the parent that the test runs: its timeout starts now.
func (m Marker) Child(t *testing.T) {
	t.Helper()
	if os.Getenv(string(m)) == "" {
		t.Skip("run by its parent test in a child process")
	}
	fmt.Fprintln(os.Stderr, armedLine)
}

// Run runs test in a child with env and m set, fails t unless the child
// passed without skipping, and returns its output.
func (m Marker) Run(t *testing.T, test string, env ...string) string {
	t.Helper()
	out, skipped := m.Start(t, test, env...)
	if skipped {
		t.Fatalf("the child skipped:\n%s", out)
	}
	return out
}

// Start is Run for a child that may find nothing to test: it reports whether
// the child skipped instead of failing.
func (m Marker) Start(t *testing.T, test string, env ...string) (out string, skipped bool) {
	t.Helper()
	r := m.Exec(t, test, Timeout, env...)
	out = r.Stdout + r.Stderr
	if r.Verdict != hangcheck.OK {
		t.Fatalf("%s: %s:\n%s", test, r.Verdict, out)
	}
	return out, strings.Contains(out, "--- SKIP: "+test+" (")
}

// Exec runs test in a child with env and m set, under timeout, and returns
// how it ended, for a parent that expects a hang or a failure as well as a
// pass: a hung child's Stderr holds its goroutine dump (see hangcheck.Run).
// The timeout counts from when the child test calls Child, so a slow process
// start is never taken for a hang; a child that has not got there within
// hangcheck.DefaultArmBound is hung.
// It fails t only if the child could not be run at all. Safe from parallel
// goroutines of one test.
func (m Marker) Exec(t testing.TB, test string, timeout time.Duration, env ...string) hangcheck.Result {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), append(env, string(m)+"=1")...)
	// A Go child exits once it has written its goroutine dump: wait for
	// that, however long a loaded machine takes, so that the dump is whole.
	r, err := hangcheck.RunWith(context.Background(), cmd, hangcheck.Limits{Timeout: timeout, Armed: armedLine, Grace: dumpGrace})
	if err != nil {
		t.Errorf("%s: %v", test, err)
	}
	return r
}
