package device_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

// TestAChildWithoutTheBackendIsNeverTakenAsNoGPU: a backend this process
// has, in a registry of its own, that the default child's DefaultRegistry
// lacks, gets "not compiled" from the child; the parent refuses that answer
// as the truth about the host, and says what to do.
func TestAChildWithoutTheBackendIsNeverTakenAsNoGPU(t *testing.T) {
	var g device.Registry
	c := &devicetest.Counting{Backend: fakeGPU{sim.New(), "gpu2"}}
	g.Register(driver.Registration{Name: "gpu2", GPU: true, Open: func() (driver.Backend, error) { return c, nil }})
	rt := openIn(t, &g, "gpu2")
	require.NoError(t, rt.UsePreflight(device.Preflight{Command: []string{os.Args[0], "-test.run=^$"}}))
	t.Setenv("GPUINIT_PREFLIGHT", "")
	err := rt.Init(context.Background())
	require.Error(t, err)
	assert.Equal(t, device.ClassNeedsOperator, device.ClassOf(err), "%v", err)
	assert.NotErrorIs(t, err, device.ErrNotCompiled)
	assert.ErrorContains(t, err, "the preflight child has no gpu2 backend, which this process has")
	assert.Equal(t, 1, rt.Stats().BringUp.Attempts, "the child's answer is not retried")
	assert.Zero(t, c.Calls().Init, "nothing initialized in this process")
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
// the child, and so does an Init that runs no child.
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
