package device_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
