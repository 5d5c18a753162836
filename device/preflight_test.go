package device_test

import (
	"context"
	"errors"
	"fmt"
	"os"
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

func TestNotYetIsRetriedInFreshChildrenUntilItClears(t *testing.T) {
	rt, c := preflighted(t, false, device.Preflight{Backoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	t.Setenv(envChildDoes, "not-ready-times")
	t.Setenv(envChildCounter, filepath.Join(t.TempDir(), "attempts"))
	t.Setenv(envChildTimes, "2")
	require.NoError(t, rt.Init(context.Background()))
	b := rt.Stats().BringUp
	assert.Equal(t, 3, b.Attempts, "two children saw 802, the third a device")
	assert.Equal(t, device.ClassNotYet, b.LastClass)
	assert.ErrorIs(t, b.LastErr, driver.ErrNotReady)
	assert.Equal(t, int64(1), c.Calls().Init, "no in-process init until a child succeeded")
}

// TestRetriesBackOffDoublingUpToTheCap: the waits between children start at
// Backoff and double up to MaxBackoff.
func TestRetriesBackOffDoublingUpToTheCap(t *testing.T) {
	rt, _ := preflighted(t, false, device.Preflight{Backoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond})
	t.Setenv(envChildDoes, "not-ready-times")
	t.Setenv(envChildCounter, filepath.Join(t.TempDir(), "attempts"))
	t.Setenv(envChildTimes, "5")
	waits := device.RecordRetryWaits(t)
	require.NoError(t, rt.Init(context.Background()))
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{10 * ms, 20 * ms, 40 * ms, 40 * ms, 40 * ms}, waits(),
		"five children saw 802, each followed by a wait: doubling from Backoff, capped at MaxBackoff")
	assert.Equal(t, 6, rt.Stats().BringUp.Attempts)
}

// TestANotYetThatNeverClearsFailsAsNotYet: children are retried until
// RetryFor has passed, then the not-yet failure is final. The bring-up's
// clock is made of its waits alone, so that how many children run follows
// from the settings, not from how fast a loaded machine starts them.
func TestANotYetThatNeverClearsFailsAsNotYet(t *testing.T) {
	rt, c := preflighted(t, false, device.Preflight{RetryFor: 100 * time.Millisecond, Backoff: 20 * time.Millisecond, MaxBackoff: 40 * time.Millisecond})
	waits := device.RetryClockOfWaits(t)
	t.Setenv(sim.EnvFail, string(sim.NotReady))
	err := rt.Init(context.Background())
	require.ErrorIs(t, err, driver.ErrNotReady)
	assert.Equal(t, device.ClassNotYet, device.ClassOf(err))
	assert.True(t, (device.ClassOf(err) != device.ClassNone))
	assert.ErrorContains(t, err, "was still not ready after")
	assert.ErrorContains(t, err, "CUDA_ERROR_SYSTEM_NOT_READY (802)")
	assert.ErrorContains(t, err, "retried for 100ms): cuInit failed: ", "the backend's name is said once, at the start")
	assert.GreaterOrEqual(t, rt.Stats().BringUp.Attempts, 2)
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{20 * ms, 40 * ms, 40 * ms}, waits(), "waits while one more still ends within RetryFor")
	assert.Equal(t, 4, rt.Stats().BringUp.Attempts, "a child after each wait")
	assert.Zero(t, c.Calls().Init, "the driver was never initialized in this process")
}

// unloaded is a backend whose library only a preflight child loaded, so that
// it cannot read the driver's version in this process (as cuda before its
// first in-process load).
type unloaded struct{ driver.Backend }

func (unloaded) DriverVersion() (int, error) { return 0, errors.New("not loaded in this process") }
func (u unloaded) Unwrap() driver.Backend    { return u.Backend }

func TestAFailedBackendStillReportsTheDriverVersionItsChildRead(t *testing.T) {
	var g device.Registry
	g.Register(driver.Registration{Name: "sim", Open: func() (driver.Backend, error) { return unloaded{sim.New()}, nil }})
	rt := openIn(t, &g, "sim")
	require.NoError(t, rt.UsePreflight(device.Preflight{Command: []string{os.Args[0], "-test.run=^$"}}))
	t.Setenv("GPUINIT_PREFLIGHT", "")
	t.Setenv(sim.EnvFail, string(sim.NoDevice))
	require.ErrorIs(t, rt.Init(context.Background()), device.ErrNoDevice)
	assert.Equal(t, 1, rt.Stats().BringUp.Attempts, "the failure was the child's")
	v, err := rt.DriverVersion()
	require.NoError(t, err, "the version the child read before the driver said no device")
	assert.Equal(t, sim.DriverVersion, v)
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

func TestNoDeviceIsNotYetOnlyWhereTheDeviceNodesExist(t *testing.T) {
	for _, present := range []bool{false, true} {
		t.Run(fmt.Sprint("device nodes: ", present), func(t *testing.T) {
			rt, _ := preflighted(t, present, device.Preflight{RetryFor: 50 * time.Millisecond, Backoff: 20 * time.Millisecond})
			device.RetryClockOfWaits(t) // one wait, then a second child, however slow they are
			t.Setenv(sim.EnvFail, string(sim.NoDevice))
			err := rt.Init(context.Background())
			require.ErrorIs(t, err, device.ErrNoDevice)
			if !present {
				assert.Equal(t, device.ClassNoGPUHere, device.ClassOf(err))
				assert.Equal(t, 1, rt.Stats().BringUp.Attempts, "no GPU here: not retried")
				return
			}
			assert.Equal(t, device.ClassNotYet, device.ClassOf(err))
			assert.Greater(t, rt.Stats().BringUp.Attempts, 1)
			assert.ErrorContains(t, err, "/dev/fakegpu0 exists")
		})
	}
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

func TestGPUINIT_PREFLIGHTOverridesTheCode(t *testing.T) {
	for _, tc := range []struct {
		env      string
		use      bool // UsePreflight in the code
		attempts int
		err      string
	}{
		{"off", true, 0, ""},
		{"0", true, 0, ""},
		{"on", false, 1, ""},
		{"20s", false, 1, ""},
		{"", true, 1, ""},
		{"", false, 0, ""},
		{"soon", true, 0, `GPUINIT_PREFLIGHT="soon": want a deadline`},
		{"-1s", false, 0, `GPUINIT_PREFLIGHT="-1s": want a deadline`},
	} {
		t.Run(fmt.Sprintf("%q use=%v", tc.env, tc.use), func(t *testing.T) {
			var g device.Registry
			g.Register(simRegistration(newSim))
			rt := openIn(t, &g, "sim")
			if tc.use {
				require.NoError(t, rt.UsePreflight(device.Preflight{Command: []string{os.Args[0], "-test.run=^$"}}))
			}
			t.Setenv("GPUINIT_PREFLIGHT", tc.env)
			if !tc.use {
				// The default child is this executable, which serves the
				// preflight from TestMain.
				t.Setenv("GPUINIT_PREFLIGHT", tc.env)
			}
			err := rt.Init(context.Background())
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				assert.Equal(t, device.ClassNeedsOperator, device.ClassOf(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.attempts, rt.Stats().BringUp.Attempts)
			assert.Equal(t, tc.attempts > 0, rt.Stats().BringUp.Preflight)
			assert.ErrorContains(t, rt.UsePreflight(device.Preflight{}), "call it before the first Init")
		})
	}
}

// TestTheVariableOverridesOnlyWhatItNames: GPUINIT_PREFLIGHT's deadline or
// "on" keeps the code's other settings: RetryFor -1 ("never retry") stays,
// so a not-yet child is tried once, not for the default five minutes.
func TestTheVariableOverridesOnlyWhatItNames(t *testing.T) {
	for _, env := range []string{"2s", "on", ""} {
		t.Run(fmt.Sprintf("%q", env), func(t *testing.T) {
			rt, _ := preflighted(t, false, device.Preflight{RetryFor: -1})
			t.Setenv(envChildDoes, "not-ready-times")
			t.Setenv(envChildCounter, filepath.Join(t.TempDir(), "attempts"))
			t.Setenv(envChildTimes, "100")
			t.Setenv("GPUINIT_PREFLIGHT", env)
			waits := device.RecordRetryWaits(t)
			err := rt.Init(context.Background())
			assert.ErrorIs(t, err, driver.ErrNotReady)
			assert.Equal(t, 1, rt.Stats().BringUp.Attempts, "RetryFor -1: one child, never a retry")
			assert.Empty(t, waits())
		})
	}
}

func TestABadPreflightVariableIsAnErrorOfUsePreflight(t *testing.T) {
	var g device.Registry
	g.Register(simRegistration(newSim))
	rt := openIn(t, &g, "sim")
	t.Setenv("GPUINIT_PREFLIGHT", "bogus")
	err := rt.UsePreflight(device.Preflight{})
	assert.ErrorContains(t, err, `GPUINIT_PREFLIGHT="bogus"`)
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
