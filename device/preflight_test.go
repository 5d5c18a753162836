package device_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/preflight"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This test binary is also the preflight children of these tests: started
// with GPUINIT_PREFLIGHT_CHILD, it serves the preflight for the sim backend
// its DefaultRegistry has (as a server importing device/backends would), or
// misbehaves as envChildDoes says first.
const (
	envChildDoes    = "GPUINIT_DEVICE_TEST_CHILD_DOES" // hang, crash, go-panic, no-report, not-ready-times, say-gomaxprocs or say-pids
	envChildCounter = "GPUINIT_DEVICE_TEST_COUNTER"    // for not-ready-times: the attempts so far; for say-*, the file
	envChildTimes   = "GPUINIT_DEVICE_TEST_TIMES"      // for not-ready-times: how many fail
)

func TestMain(m *testing.M) {
	if _, child := os.LookupEnv("GPUINIT_PREFLIGHT_CHILD"); child {
		misbehave()
	}
	device.ServePreflight()
	os.Exit(m.Run())
}

// misbehave does what envChildDoes asks of a preflight child.
func misbehave() {
	switch os.Getenv(envChildDoes) {
	case "hang":
		preflight.Arm() // as Serve does: the check starts, and with it the deadline
		for {
			time.Sleep(time.Hour) // a timer keeps the runtime from calling it a deadlock, as a driver call in C does
		}
	case "crash":
		// A SIGSEGV the Go runtime did not cause: it reports it as it does a
		// fault in a driver's C code ("SIGSEGV: segmentation violation"), and
		// exits with status 2.
		_ = syscall.Kill(os.Getpid(), syscall.SIGSEGV)
		for {
			time.Sleep(time.Hour)
		}
	case "go-panic":
		var p *int
		*p = 1 // a fault in Go code: a Go panic, before the child's check
	case "no-report":
		os.Exit(0)
	case "say-gomaxprocs":
		_ = os.WriteFile(os.Getenv(envChildCounter), []byte(strconv.Itoa(runtime.GOMAXPROCS(0))), 0o644)
	case "say-pids": // as it starts: a pre-started child's line says that it started ahead
		if f, err := os.OpenFile(os.Getenv(envChildCounter), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, os.Getpid())
			f.Close()
		}
	case "not-ready-times":
		path := os.Getenv(envChildCounter)
		b, _ := os.ReadFile(path)
		seen, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		times, _ := strconv.Atoi(os.Getenv(envChildTimes))
		_ = os.WriteFile(path, []byte(strconv.Itoa(seen+1)), 0o644)
		if seen < times {
			os.Setenv(sim.EnvFail, string(sim.NotReady))
		}
	}
}

// preflighted returns a Runtime over a counting sim backend named "sim", with
// the preflight on and this test binary as its child, and the counter of its
// in-process calls. present is what the backend's Present reports.
func preflighted(t *testing.T, present bool, p device.Preflight) (*device.Runtime, *devicetest.Counting) {
	t.Helper()
	var g device.Registry
	c := &devicetest.Counting{Backend: sim.New()}
	g.Register(driver.Registration{Name: "sim", Open: func() (driver.Backend, error) { return c, nil },
		Present: func() (bool, string) { return present, "/dev/fakegpu0 exists" }})
	rt := openIn(t, &g, "sim")
	p.Command = []string{os.Args[0], "-test.run=^$"}
	require.NoError(t, rt.UsePreflight(p))
	t.Setenv("GPUINIT_PREFLIGHT", "")
	return rt, c
}

func TestAPreflightChildSucceedsBeforeTheDriverInitsInProcess(t *testing.T) {
	rt, c := preflighted(t, false, device.Preflight{Deadline: 30 * time.Second})
	before := time.Now()
	require.NoError(t, rt.Init(context.Background()))
	b := rt.Stats().BringUp
	assert.True(t, b.Preflight)
	assert.Equal(t, 1, b.Attempts)
	assert.Nil(t, b.LastErr)
	assert.Equal(t, device.Phase(""), b.Phase, "done once Ready")
	assert.Empty(t, b.Summary, "a done bring-up says nothing in readiness's reason")
	assert.False(t, b.Since.Before(b.InProcess), "done since the end, after the in-process part began")
	assert.True(t, b.InProcess.After(before), "the in-process part began after the child")
	assert.Equal(t, int64(1), c.Calls().Init, "the driver's init ran in this process once, after the child")
}

// TestAChildRunsWithOneP: the child's work is one goroutine's, and a Go
// runtime with one P starts faster (more so on a host of many cores), so the
// child runs with GOMAXPROCS=1, whatever the server's environment says.
func TestAChildRunsWithOneP(t *testing.T) {
	rt, _ := preflighted(t, false, device.Preflight{})
	t.Setenv("GOMAXPROCS", "2")
	said := filepath.Join(t.TempDir(), "gomaxprocs")
	t.Setenv(envChildDoes, "say-gomaxprocs")
	t.Setenv(envChildCounter, said)
	require.NoError(t, rt.Init(context.Background()))
	b, err := os.ReadFile(said)
	require.NoError(t, err)
	assert.Equal(t, "1", string(b))
}

func TestAChildThatGivesNoAnswer(t *testing.T) {
	for _, tc := range []struct {
		does     string
		class    device.Class
		hung     bool
		signal   string
		attempts int
	}{
		{"hang", device.ClassNotYet, true, "", 2},
		{"crash", device.ClassNotYet, false, "SIGSEGV", 2},
		// A Go panic is code's, which a fresh child runs again: not retried.
		{"go-panic", device.ClassNeedsOperator, false, "", 1},
		{"no-report", device.ClassNeedsOperator, false, "", 1}, // a command that never will: not retried
	} {
		t.Run(tc.does, func(t *testing.T) {
			// Only a hang needs the deadline; the others end by
			// themselves, however slowly a loaded machine starts them.
			deadline := 10 * time.Second
			if tc.hung {
				deadline = 100 * time.Millisecond // from the child's armed line, however slow its start
			}
			// The clock against RetryFor is the waits': one wait of
			// 10 ms, so a second child, whatever the machine's speed.
			rt, c := preflighted(t, true, device.Preflight{Deadline: deadline, RetryFor: 15 * time.Millisecond,
				Backoff: 10 * time.Millisecond})
			device.RetryClockOfWaits(t)
			t.Setenv(envChildDoes, tc.does)
			start := time.Now()
			err := rt.Init(context.Background())
			took := time.Since(start)
			var pe *device.PreflightError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.class, device.ClassOf(err), "%v", err)
			assert.Equal(t, tc.hung, errors.Is(err, driver.ErrInitHung))
			assert.Equal(t, tc.hung, pe.Hung)
			assert.Equal(t, tc.signal, pe.Signal)
			if tc.attempts > 1 {
				assert.GreaterOrEqual(t, rt.Stats().BringUp.Attempts, tc.attempts, "a not-yet failure is retried")
			} else {
				assert.Equal(t, tc.attempts, rt.Stats().BringUp.Attempts, "only a not-yet failure is retried")
			}
			assert.Zero(t, c.Calls().Init, "the driver was never initialized in this process")
			assert.Empty(t, childtest.Children(os.Getpid()), "no child left")
			assert.Empty(t, childtest.Zombies(os.Getpid()), "no zombie: every child was waited for")
			switch tc.does {
			case "hang":
				assert.Contains(t, pe.Stacks, "device_test.misbehave", "the stacks say where it hung")
				assert.Less(t, took, 1500*time.Millisecond+2*(300*time.Millisecond+5*time.Second), "each child is stopped at its deadline and grace")
			case "crash":
				assert.Contains(t, pe.Stderr, "SIGSEGV: segmentation violation", "the tail of its stderr")
				assert.Contains(t, err.Error(), "crashed with SIGSEGV")
				assert.False(t, pe.Panicked)
			case "go-panic":
				assert.True(t, pe.Panicked)
				assert.Contains(t, err.Error(), "panicked in device_test.misbehave at github.com/gpuinit/gpuinit/device/preflight_test.go:")
				assert.Contains(t, err.Error(), ": panic: runtime error: invalid memory address or nil pointer dereference")
				assert.NotRegexp(t, absoluteGoPath, err.Error(), "no build machine's path")
			case "no-report":
				assert.True(t, pe.NoReport)
				assert.Contains(t, err.Error(), "without a report")
			}
		})
	}
}

// absoluteGoPath finds a Go file named by an absolute path, as the build
// machine's are in a goroutine's stack.
var absoluteGoPath = regexp.MustCompile(`(^|[\s(])/[^\s]*\.go\b`)

// TestAPanicInTheDriversInitIsNamedByItsLineAndFrame: the driver's init
// panics in the child's check (sim's Init, as a backend's Go code would).
// The error names the panic and the frame, with the file as -trimpath would
// name it, and the class is needs-operator, not retried: a fresh child
// would run the same code into the same panic.
func TestAPanicInTheDriversInitIsNamedByItsLineAndFrame(t *testing.T) {
	rt, c := preflighted(t, true, device.Preflight{Deadline: 10 * time.Second, RetryFor: 1500 * time.Millisecond,
		Backoff: 10 * time.Millisecond})
	t.Setenv(sim.EnvFail, string(sim.Panic)) // in the child: the parent's sim was made before
	err := rt.Init(context.Background())
	var pe *device.PreflightError
	require.ErrorAs(t, err, &pe)
	assert.True(t, pe.Panicked)
	assert.False(t, pe.Crashed())
	assert.Equal(t, "panic: sim: simulated driver panic in Init", pe.Report)
	assert.Regexp(t, `^sim\.\(\*Backend\)\.Init at github\.com/gpuinit/gpuinit/device/sim/sim\.go:\d+$`, pe.Frame)
	assert.Regexp(t, `^device: sim: preflight child 1 \(.*\) panicked in sim\.\(\*Backend\)\.Init at `+
		`github\.com/gpuinit/gpuinit/device/sim/sim\.go:\d+: panic: sim: simulated driver panic in Init$`, pe.Error())
	assert.NotRegexp(t, absoluteGoPath, err.Error(), "no build machine's path")
	assert.LessOrEqual(t, len(pe.Error()), 300+len(pe.Command))
	assert.Equal(t, device.ClassNeedsOperator, device.ClassOf(err))
	assert.Equal(t, 1, rt.Stats().BringUp.Attempts, "not retried")
	assert.Zero(t, c.Calls().Init, "the driver was never initialized in this process")
}

// initializedAlready is a backend whose driver a cgo engine brought up first.
type initializedAlready struct{ driver.Backend }

func (initializedAlready) DriverInitialized() bool { return true }

func TestThePreflightIsSkippedWhereTheDriverIsInitializedAlready(t *testing.T) {
	var g device.Registry
	g.Register(driver.Registration{Name: "sim", Open: func() (driver.Backend, error) { return initializedAlready{sim.New()}, nil }})
	rt := openIn(t, &g, "sim")
	require.NoError(t, rt.UsePreflight(device.Preflight{Command: []string{"/nonexistent/child"}}))
	t.Setenv("GPUINIT_PREFLIGHT", "")
	require.NoError(t, rt.Init(context.Background()), "no child was started: its command does not exist")
	assert.Zero(t, rt.Stats().BringUp.Attempts)
}

// TestAGoPanicIsNoCrash: a Go panic ended by the runtime's SIGABRT (as
// GOTRACEBACK=crash ends one) is still a panic, not a driver's crash.
func TestAGoPanicIsNoCrash(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     *device.PreflightError
		crashed bool
	}{
		{"a fault in C code", &device.PreflightError{Signal: "SIGSEGV", ExitCode: 2}, true},
		{"killed by a signal", &device.PreflightError{Signal: "SIGKILL", ExitCode: -1}, true},
		{"a Go panic", &device.PreflightError{Panicked: true, ExitCode: 2}, false},
		{"a Go panic under GOTRACEBACK=crash", &device.PreflightError{Panicked: true, Signal: "SIGABRT", ExitCode: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.crashed, tc.err.Crashed()) })
	}
}

// TestAnUnkillableChildIsSaidToBe: a hung child that SIGKILL did not end
// within the reap bound (stuck in uninterruptible sleep in a kernel driver;
// internal/hangcheck's tests give up on such a child by that bound) is
// reported as hung and not killed, and classed as a hang.
func TestAnUnkillableChildIsSaidToBe(t *testing.T) {
	err := error(&device.PreflightError{Backend: "cuda", Command: "server", Attempt: 2, Took: 33 * time.Second,
		Hung: true, Unkillable: true, Call: "cuInit"})
	assert.ErrorContains(t, err, "device: cuda: preflight child 2 (server) hung for 33s, and could not be killed: it is stuck in the kernel driver")
	assert.ErrorContains(t, err, "cuInit")
	assert.ErrorIs(t, err, driver.ErrInitHung)
	assert.Equal(t, device.ClassNotYet, device.ClassOf(err))
}

const removedBinaryChild = childtest.Marker("GPUINIT_DEVICE_TEST_REMOVED_BINARY")

// TestTheDefaultChildIsTheRunningBinaryEvenOnceItsFileIsGone: after a
// rolling upgrade removed the server's file, the default preflight child is
// still the running binary (exec'd through /proc/self/exe), not a path that
// names nothing.
func TestTheDefaultChildIsTheRunningBinaryEvenOnceItsFileIsGone(t *testing.T) {
	if _, err := os.Stat("/proc/self/exe"); err != nil {
		t.Skip("no /proc/self/exe on this system")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	copyPath := filepath.Join(t.TempDir(), "server")
	copyFile(t, self, copyPath)
	ctx, cancel := context.WithTimeout(context.Background(), childtest.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, copyPath, "-test.run=^TestRemovedBinaryChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), string(removedBinaryChild)+"=1", "GPUINIT_PREFLIGHT"+"=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--- PASS: TestRemovedBinaryChild")
}

// TestRemovedBinaryChild removes its own executable, then brings sim up
// through the default preflight child.
func TestRemovedBinaryChild(t *testing.T) {
	removedBinaryChild.Child(t)
	self, err := os.Executable()
	require.NoError(t, err)
	require.NoError(t, os.Remove(self))
	_, err = os.Stat(self)
	require.ErrorIs(t, err, os.ErrNotExist, "the file is gone")
	var g device.Registry
	g.Register(simRegistration(newSim))
	rt := openIn(t, &g, "sim")
	require.NoError(t, rt.UsePreflight(device.Preflight{Deadline: 30 * time.Second, RetryFor: -1}))
	require.NoError(t, rt.Init(context.Background()))
	assert.Equal(t, 1, rt.Stats().BringUp.Attempts, "one child, which ran")
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

// prestarted is preflighted with Prestart: each child of its tests,
// pre-started or cold, writes its pid to a file as it starts. It returns
// once the child UsePreflight started has, with its pid, and a function
// that lists the pids written.
func prestarted(t *testing.T, p device.Preflight) (rt *device.Runtime, c *devicetest.Counting, pid int, pids func() []string) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pids")
	t.Setenv(envChildDoes, "say-pids")
	t.Setenv(envChildCounter, pidFile)
	p.Prestart = true
	rt, c = preflighted(t, false, p)
	require.True(t, device.HasPrestartedChild(rt))
	pids = func() []string { b, _ := os.ReadFile(pidFile); return strings.Fields(string(b)) }
	require.Eventually(t, func() bool { return len(pids()) > 0 }, time.Minute, time.Millisecond,
		"the pre-started child never started")
	pid, err := strconv.Atoi(pids()[0])
	require.NoError(t, err)
	return rt, c, pid, pids
}

// gone reports whether process pid has exited and been reaped.
func gone(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }

// TestAPrestartedChildChecksWithTheInitsEnvironment: the child started at
// UsePreflight is the one the first Init uses, and it checks with the
// environment of the Init, not of its start: a variable set in between
// counts, as it would for a child started then. Here it makes the child's
// sim fail, while this process's sim, made before, does not: so the Init
// fails only if the child saw it, and nothing initializes in this process.
func TestAPrestartedChildChecksWithTheInitsEnvironment(t *testing.T) {
	rt, c, pid, pids := prestarted(t, device.Preflight{RetryFor: -1})
	t.Setenv(sim.EnvFail, string(sim.NoDevice))
	err := rt.Init(context.Background())
	require.ErrorIs(t, err, device.ErrNoDevice, "the child checked with GPUINIT_SIM_FAIL set after it started")
	assert.Zero(t, c.Calls().Init, "nothing initialized in this process")
	assert.Equal(t, 1, rt.Stats().BringUp.Attempts)
	assert.Equal(t, []string{strconv.Itoa(pid)}, pids(), "the pre-started child checked; no other started")
	assert.False(t, device.HasPrestartedChild(rt))
	assert.True(t, gone(pid), "the child was used, and waited for")
}

// TestAPrestartedChildThatNoInitTakesIsEnded: Shutdown before any Init ends
// the child, and so does an Init that runs no child or fails on a setting.
func TestAPrestartedChildThatNoInitTakesIsEnded(t *testing.T) {
	t.Run("Shutdown", func(t *testing.T) {
		rt, _, pid, _ := prestarted(t, device.Preflight{})
		require.NoError(t, rt.Shutdown(context.Background()))
		assert.True(t, gone(pid), "Shutdown waited for the child it ended")
		assert.False(t, device.HasPrestartedChild(rt))
		assert.ErrorIs(t, rt.UsePreflight(device.Preflight{Prestart: true}), device.ErrClosed, "and starts no other")
	})
	t.Run("an Init with the preflight turned off", func(t *testing.T) {
		rt, c, pid, _ := prestarted(t, device.Preflight{})
		t.Setenv("GPUINIT_PREFLIGHT", "off")
		require.NoError(t, rt.Init(context.Background()))
		assert.Equal(t, int64(1), c.Calls().Init)
		assert.True(t, gone(pid), "the Init ended the child it did not use")
	})
	t.Run("an Init that a bad GPUINIT_PREFLIGHT fails", func(t *testing.T) {
		rt, c, pid, _ := prestarted(t, device.Preflight{})
		t.Setenv("GPUINIT_PREFLIGHT", "sometimes")
		err := rt.Init(context.Background())
		require.ErrorIs(t, err, device.ErrBadSetting)
		assert.Equal(t, device.ClassNeedsOperator, device.ClassOf(err))
		assert.Zero(t, c.Calls().Init)
		assert.True(t, gone(pid), "the Init ended the child it could not use")
	})
	t.Run("a second UsePreflight", func(t *testing.T) {
		rt, _, pid, _ := prestarted(t, device.Preflight{})
		require.NoError(t, rt.UsePreflight(device.Preflight{Command: []string{os.Args[0], "-test.run=^$"}}))
		assert.True(t, gone(pid), "the first call's child is ended")
		assert.False(t, device.HasPrestartedChild(rt), "the second call prestarts nothing")
	})
}

// TestNoChildIsPrestartedWithThePreflightOff: GPUINIT_PREFLIGHT=off at
// UsePreflight starts no child.
func TestNoChildIsPrestartedWithThePreflightOff(t *testing.T) {
	t.Setenv("GPUINIT_PREFLIGHT", "off")
	rt := device.New(sim.New())
	t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
	require.NoError(t, rt.UsePreflight(device.Preflight{Prestart: true, Command: []string{os.Args[0], "-test.run=^$"}}))
	assert.False(t, device.HasPrestartedChild(rt))
}
