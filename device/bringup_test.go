package device_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitFor polls cond, which reads a state the code exposes, until it holds;
// it fails t after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after a minute", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCloseStopsThePreflight: Close ends a wait between attempts and kills a
// child under way, and returns only once they are over: no child is left,
// none starts later, and nothing initializes in this process.
func TestCloseStopsThePreflight(t *testing.T) {
	for _, tc := range []struct {
		name  string
		does  string
		phase device.Phase
	}{
		{"waiting to retry", "not-ready-times", device.PhaseWaiting},
		{"a child hung in the driver's init", "hang", device.PhasePreflight},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, c := preflighted(t, true, device.Preflight{Deadline: time.Hour, Backoff: time.Hour, RetryFor: 2 * time.Hour})
			t.Setenv(envChildDoes, tc.does)
			t.Setenv(envChildCounter, filepath.Join(t.TempDir(), "attempts"))
			t.Setenv(envChildTimes, "1000")
			require.NoError(t, rt.Start(context.Background()))
			waitFor(t, "in "+string(tc.phase), func() bool { return rt.Stats().BringUp.Phase == tc.phase })
			if tc.does == "hang" {
				waitFor(t, "with a child", func() bool { return len(childtest.Children(os.Getpid())) > 0 })
			}
			attempts := rt.Stats().BringUp.Attempts
			// Bounded: a Shutdown that did not stop the preflight would wait
			// for an hour's backoff or a hung child.
			bound := 20 * time.Second
			shut, cancelShut := context.WithTimeout(context.Background(), bound)
			defer cancelShut()
			start := time.Now()
			require.NoError(t, rt.Shutdown(shut))
			require.Less(t, time.Since(start), bound, "Shutdown returned before its ctx ended")
			assert.Empty(t, childtest.Children(os.Getpid()), "Close returned with no child left")
			// The initialization under way ends with ErrClosed, not with the
			// cancellation that stopped its child or its wait.
			waitFor(t, "failed", func() bool { return rt.Stats().State == lazy.Failed })
			assert.ErrorIs(t, rt.Stats().Err, device.ErrClosed)
			assert.NotErrorIs(t, rt.Stats().Err, context.Canceled)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := rt.Init(ctx) // bounded: an initialization that Close did not stop would go on
			assert.ErrorIs(t, err, device.ErrClosed)
			assert.Equal(t, device.ClassNone, device.ClassOf(err), "closed is no GPU failure")
			assert.Equal(t, attempts, rt.Stats().BringUp.Attempts, "no child started after Close")
			b := rt.Stats().BringUp
			assert.Equal(t, device.Phase(""), b.Phase, "no phase once the initialization ended")
			assert.Empty(t, b.Summary, "nor a summary that says it still runs")
			assert.Zero(t, c.Calls().Init, "nothing initialized in this process")
		})
	}
}

// TestAnInProcessCandidatePassedOverWedgesNothing: when auto checked its first
// candidate in this process (its driver was up already) and passed it over,
// the next candidate's preflight and waits are not "in process": a health
// check's deadline does not count them.
func TestAnInProcessCandidatePassedOverWedgesNothing(t *testing.T) {
	var g device.Registry
	g.Register(driver.Registration{Name: "first", GPU: true, AutoRank: 10,
		Open: func() (driver.Backend, error) {
			return initializedAlready{fakeGPU{sim.New(sim.WithFailure(sim.NoDevice)), "first"}}, nil
		}})
	g.Register(driver.Registration{Name: "sim", GPU: true, AutoRank: 20, Open: newSim})
	rt := openIn(t, &g, "auto")
	require.NoError(t, rt.UsePreflight(device.Preflight{Command: []string{os.Args[0], "-test.run=^$"}}))
	t.Setenv("GPUINIT_PREFLIGHT", "")
	t.Setenv(envChildDoes, "not-ready-times")
	t.Setenv(envChildCounter, filepath.Join(t.TempDir(), "attempts"))
	t.Setenv(envChildTimes, "1")
	var during []device.BringUp
	device.OnRetryWait(t, func(time.Duration) { during = append(during, rt.Stats().BringUp) })
	require.NoError(t, rt.Init(context.Background()))
	require.Len(t, during, 1, "one wait, for sim's second child")
	assert.Equal(t, device.PhaseWaiting, during[0].Phase)
	assert.True(t, during[0].InProcess.IsZero(), "first's in-process check is over: %v", during[0].InProcess)
	assert.Equal(t, "sim", rt.Name())
}

// TestPassedOverNeverListsTheChoice: a backend that failed not-yet, then came
// up on a retry, is auto's choice, not a backend passed over.
func TestPassedOverNeverListsTheChoice(t *testing.T) {
	var g device.Registry
	c := &devicetest.Counting{Backend: sim.New()}
	g.Register(driver.Registration{Name: "sim", GPU: true, Open: func() (driver.Backend, error) { return c, nil }})
	rt := openIn(t, &g, "auto")
	require.NoError(t, rt.UsePreflight(device.Preflight{Command: []string{os.Args[0], "-test.run=^$"}}))
	t.Setenv("GPUINIT_PREFLIGHT", "")
	t.Setenv(envChildDoes, "not-ready-times")
	t.Setenv(envChildCounter, filepath.Join(t.TempDir(), "attempts"))
	t.Setenv(envChildTimes, "1")
	device.RecordRetryWaits(t)
	require.NoError(t, rt.Init(context.Background()))
	assert.Equal(t, 2, rt.Stats().BringUp.Attempts, "802 once, then a device")
	assert.Empty(t, rt.Stats().PassedOver, "sim is the choice")
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

func (u unloaded) Unwrap() driver.Backend { return u.Backend }

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
