package childtest

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAServerIsFoundByItsListeningLineAndItsLogFollows: StartServer returns
// at the line that says where the program listens, and the lines after it
// reach the Log, which WaitFor waits on.
func TestAServerIsFoundByItsListeningLineAndItsLogFollows(t *testing.T) {
	script := `echo starting >&2; echo "listening on 127.0.0.1:7" >&2; echo one >&2; echo two >&2; exec sleep 30`
	s := StartServer(t, "/bin/sh", nil, regexp.MustCompile(`listening on (\S+)`), "-c", script)
	if s.URL != "http://127.0.0.1:7" {
		t.Fatalf("URL %q, want http://127.0.0.1:7", s.URL)
	}
	s.Log.WaitFor(t, "two")
	if got := s.Log.Lines(); !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("the log holds %q, want the lines after the listening one", got)
	}
}

// TestAServerThatNeverListensFailsTheTestAndIsKilled runs, in a child of
// this test binary, a StartServer of a program that never says where it
// listens: the child's test fails within the bound, naming what the program
// said, and the program is gone.
func TestAServerThatNeverListensFailsTheTestAndIsKilled(t *testing.T) {
	if os.Getenv("CHILDTEST_NEVER_LISTENS") != "" {
		startBound = 200 * time.Millisecond
		StartServer(t, "/bin/sh", nil, regexp.MustCompile(`listening on (\S+)`), "-c", `echo "pid $$" >&2; exec sleep 60`)
		return
	}
	// Bounded: a StartServer that waited for ever would hold the child.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAServerThatNeverListensFailsTheTestAndIsKilled$", "-test.v")
	cmd.Env = append(os.Environ(), "CHILDTEST_NEVER_LISTENS=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the child's test passed:\n%s", out)
	}
	if !strings.Contains(string(out), "said nothing that matched") || !strings.Contains(string(out), "pid ") {
		t.Fatalf("the failure does not say what happened, with the program's stderr:\n%s", out)
	}
	m := regexp.MustCompile(`pid (\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no pid in:\n%s", out)
	}
	pid, _ := strconv.Atoi(string(m[1]))
	if err := syscall.Kill(pid, 0); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the program (pid %d) outlived the test", pid)
	}
}
