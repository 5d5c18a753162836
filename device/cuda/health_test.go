//go:build linux && cgo && !nocuda

package cuda

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envEvents is the fake NVML's events file, which a child appends to.
const envEvents = "GPUINIT_FAKE_NVML_EVENTS"

func TestHealthWatch(t *testing.T) {
	env, _ := fake(t, fakedriver.CUDA)
	env = slices.Clip(env) // the parallel subtests append to it
	nvml := fakedriver.Build(t, fakedriver.NVML)
	withEvents := func(t *testing.T, extra ...string) []string {
		events := filepath.Join(t.TempDir(), "events")
		require.NoError(t, os.WriteFile(events, nil, 0o644))
		return append(append(env, EnvNVMLLibrary+"="+nvml, envEvents+"="+events), extra...)
	}
	for _, c := range []struct{ name, child string }{
		{"Xid 79 on one of two devices loses that device alone, named, within 100 ms", "TestChildXidLosesOneDevice"},
		{"Xid 13 is counted and the device serves on", "TestChildXidCounted"},
		{"a double-bit ECC error loses the device and a single-bit one is counted", "TestChildECC"},
		{"a failed wait is reported and watched again, and loses nothing", "TestChildWatchErrorRetried"},
		{"the counters a server should see are read", "TestChildCounters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each child has its own fakes' files, and mostly waits in NVML
			runChild(t, c.child, withEvents(t, "GPUINIT_FAKE_NVML_PERSISTENCE=0", "GPUINIT_FAKE_NVML_ECC_CORRECTED=5",
				"GPUINIT_FAKE_NVML_REMAP_PENDING=1", "GPUINIT_FAKE_NVML_THROTTLE=72",
				"GPUINIT_FAKE_NVML_RETIRED_SBE=2", "GPUINIT_FAKE_NVML_RETIRED_DBE=1", "GPUINIT_FAKE_NVML_RETIRED_PENDING=1")...)
		})
	}
	t.Run("an idle watch blocks in NVML's wait, a second at a time", func(t *testing.T) {
		t.Parallel()
		log := fakedriver.NewCallLog(t)
		runChild(t, "TestChildIdleWatch", withEvents(t, "GPUINIT_FAKE_NVML_LOG="+string(log), "NVML_LOG="+string(log))...)
	})
	t.Run("without NVML, health is unknown, said so", func(t *testing.T) {
		t.Parallel()
		runChild(t, "TestChildHealthUnknown", append(env, EnvNVMLLibrary+"=/nonexistent/libnvidia-ml.so.1",
			"WANT_WHY=libnvidia-ml.so.1")...)
	})
	t.Run("where no device supports events, health is unknown, said so", func(t *testing.T) {
		t.Parallel()
		runChild(t, "TestChildHealthUnknown", withEvents(t, "GPUINIT_FAKE_NVML_NO_EVENTS=1", "WANT_WHY=Jetson")...)
	})
}

// watchedRuntime returns an initialized Runtime once its health watch
// watches both devices, and a function that injects an event line.
func watchedRuntime(t *testing.T) (*device.Runtime, func(format string, ordinal int, rest ...string)) {
	t.Helper()
	r := device.New(process)
	t.Cleanup(func() {
		if !r.Stats().Closed { // a test that shut it down checked its result
			assert.NoError(t, r.Shutdown(context.Background()))
		}
	})
	ctx := context.Background()
	infos, err := r.Devices(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 2)
	require.Eventually(t, func() bool {
		h := r.Stats().Health
		return len(h) == 2 && h[0].Watched && h[1].Watched
	}, 10*time.Second, time.Millisecond, "both devices are watched")
	inject := func(kind string, ordinal int, rest ...string) {
		f, err := os.OpenFile(os.Getenv(envEvents), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		defer f.Close()
		_, err = f.WriteString(strings.Join(append([]string{kind, infos[ordinal].UUID}, rest...), " ") + "\n")
		require.NoError(t, err)
	}
	return r, inject
}

func TestChildXidLosesOneDevice(t *testing.T) {
	child(t)
	r, inject := watchedRuntime(t)
	start := time.Now()
	inject("xid", 1, "79")
	require.Eventually(t, func() bool { return r.CheckDevice(1) != nil }, 10*time.Second, 100*time.Microsecond)
	took := time.Since(start)
	assert.Less(t, took, 100*time.Millisecond, "from the Xid to the device's loss")

	lost := r.Stats().Lost
	require.Len(t, lost, 1)
	assert.Equal(t, 1, lost[0].Ordinal)
	assert.Equal(t, device.LossXid, lost[0].Source)
	assert.Equal(t, 79, lost[0].Err.Code)
	assert.Equal(t, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", lost[0].Err.Name)
	assert.Contains(t, lost[0].Error(), "fallen off the bus")
	assert.Contains(t, lost[0].Err.Hint, "catalog")
	assert.ErrorIs(t, r.CheckDevice(1), device.ErrDeviceLost)

	assert.NoError(t, r.CheckDevice(0), "the other device serves")
	_, err := r.Memory(context.Background(), 0)
	assert.NoError(t, err)
	assert.Equal(t, map[string]int64{"xid 79": 1}, r.Stats().Health[1].Counted)
	t.Logf("from the Xid to the loss: %v", took)
}

func TestChildXidCounted(t *testing.T) {
	child(t)
	r, inject := watchedRuntime(t)
	inject("xid", 0, "13")
	require.Eventually(t, func() bool { return r.Stats().Health[0].Counted["xid 13"] == 1 }, 10*time.Second, time.Millisecond)
	assert.Empty(t, r.Stats().Lost)
	assert.NoError(t, r.CheckDevice(0))
	assert.Equal(t, map[int]int64{0: 1}, r.Stats().ErrorCounts)
}

func TestChildECC(t *testing.T) {
	child(t)
	r, inject := watchedRuntime(t)
	inject("ecc-single", 0)
	inject("ecc-double", 1)
	require.Eventually(t, func() bool { return len(r.Stats().Lost) == 1 && r.Stats().Health[0].Counted["ecc corrected"] == 1 },
		10*time.Second, time.Millisecond)
	lost := r.Stats().Lost
	assert.Equal(t, 1, lost[0].Ordinal)
	assert.Equal(t, device.LossECC, lost[0].Source)
	assert.Contains(t, lost[0].Err.Message, "double-bit")
	assert.NoError(t, r.CheckDevice(0))
}

func TestChildWatchErrorRetried(t *testing.T) {
	child(t)
	r, inject := watchedRuntime(t)
	f, err := os.OpenFile(os.Getenv(envEvents), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("error 999\n") // the next wait fails with NVML_ERROR_UNKNOWN
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Eventually(t, func() bool {
		h := r.Stats().Health
		return strings.Contains(h[0].WatchError, "NVML_ERROR_UNKNOWN") && strings.Contains(h[1].WatchError, "watching again in 1s")
	}, 10*time.Second, time.Millisecond, "every device is told of the failure")
	assert.Empty(t, r.Stats().Lost, "an NVML failure loses no device")
	inject("xid", 1, "13")
	require.Eventually(t, func() bool { return r.Stats().Health[1].Counted["xid 13"] == 1 }, 10*time.Second, time.Millisecond,
		"the watch runs again")
	h := r.Stats().Health[1]
	assert.Empty(t, h.WatchError, "cleared once it watches again")
	assert.Equal(t, int64(1), h.WatchErrors)
	assert.Empty(t, r.Stats().Lost)
}

func TestChildCounters(t *testing.T) {
	child(t)
	r, _ := watchedRuntime(t)
	require.Eventually(t, func() bool { return r.Stats().Health[1].Counters != nil }, 10*time.Second, time.Millisecond)
	c := r.Stats().Health[1].Counters
	require.NotNil(t, c.Persistence)
	assert.False(t, *c.Persistence)
	assert.Contains(t, r.Stats().Health[1].Hint, "1-3 s per GPU", "persistence mode off: the init's cost is named")
	require.NotNil(t, c.ECCCorrected)
	assert.Equal(t, uint64(5), *c.ECCCorrected)
	require.NotNil(t, c.RowRemapsPending)
	assert.True(t, *c.RowRemapsPending)
	assert.Equal(t, []string{"hw-slowdown", "hw-thermal-slowdown"}, c.ThrottleReasons)
	require.NotNil(t, c.RetiredPages)
	assert.Equal(t, uint64(3), *c.RetiredPages, "pages retired for either cause")
	require.NotNil(t, c.RetiredPagesPending)
	assert.True(t, *c.RetiredPagesPending)
	assert.Empty(t, r.Stats().Lost, "counters lose nothing")
}

func TestChildHealthUnknown(t *testing.T) {
	child(t)
	r := device.New(process)
	t.Cleanup(func() { assert.NoError(t, r.Shutdown(context.Background())) })
	_, err := r.Devices(context.Background())
	require.NoError(t, err)
	want := os.Getenv("WANT_WHY")
	require.Eventually(t, func() bool {
		h := r.Stats().Health
		return len(h) == 2 && strings.Contains(h[0].Why, want) && strings.Contains(h[1].Why, want)
	}, 10*time.Second, time.Millisecond, "the reason names %q", want)
	for _, h := range r.Stats().Health {
		assert.False(t, h.Watched)
		assert.Contains(t, h.Why, "unknown")
	}
	assert.Empty(t, r.Stats().Lost)
	assert.NoError(t, r.CheckDevice(0), "an unknown health loses nothing")
}

func TestCanary(t *testing.T) {
	env, log := fake(t, fakedriver.CUDA)
	t.Run("a round trip in the device's primary context, freed", func(t *testing.T) {
		log.Reset(t)
		runChild(t, "TestChildCanary", append(env, "WANT=ok")...)
		assert.Equal(t, []string{"cuMemAlloc_v2 4", "cuMemsetD32_v2 1", "cuMemcpyDtoH_v2 4", "cuMemFree_v2"},
			log.Lines(t, "cuMemAlloc", "cuMemset", "cuMemcpy", "cuMemFree"))
	})
	t.Run("a pattern read back wrong loses the device", func(t *testing.T) {
		runChild(t, "TestChildCanary", append(env, "WANT=mismatch", "GPUINIT_FAKE_CUDA_MEMSET_CORRUPT=1")...)
	})
	t.Run("a round trip that hangs loses the device at the call deadline, and starts no second", func(t *testing.T) {
		runChild(t, "TestChildCanary", append(env, "WANT=hang", "GPUINIT_FAKE_CUDA_MEMSET_HANG=1")...)
	})
}

func TestChildCanary(t *testing.T) {
	child(t)
	r := device.New(process)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := r.Shutdown(ctx)
		if os.Getenv("WANT") == "hang" {
			assert.ErrorContains(t, err, "1 call(s) on device 1, lost as hung", "the hung round trip is abandoned, not waited for")
			assert.NotErrorIs(t, err, context.DeadlineExceeded, "at once: its device was lost as hung")
			return
		}
		assert.NoError(t, err)
	})
	ctx := context.Background()
	switch os.Getenv("WANT") {
	case "ok":
		require.NoError(t, r.Canary(ctx, 1))
		assert.Empty(t, r.Stats().Lost)
	case "mismatch":
		err := r.Canary(ctx, 1)
		require.ErrorIs(t, err, device.ErrDeviceLost)
		assert.ErrorContains(t, err, "gave back 0x9e3679b9 for the 0x9e3779b9 it set")
		lost := r.Stats().Lost
		require.Len(t, lost, 1)
		assert.Equal(t, device.LossCanary, lost[0].Source)
		assert.NoError(t, r.CheckDevice(0))
	case "hang":
		require.NoError(t, r.Init(ctx))
		r.SetCallDeadline(50 * time.Millisecond)
		wait, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		err := r.Canary(wait, 1)
		require.ErrorIs(t, err, context.DeadlineExceeded, "the wait ends with its context")
		again := r.Canary(ctx, 1)
		assert.ErrorContains(t, again, "is still running", "no second round trip while the first is stuck")
		require.Eventually(t, func() bool { return r.CheckDevice(1) != nil }, 10*time.Second, time.Millisecond)
		lost := r.Stats().Lost
		assert.Equal(t, device.LossDeadline, lost[0].Source)
		assert.Equal(t, "canary", lost[0].Err.Op)
		assert.ErrorIs(t, r.Canary(ctx, 1), device.ErrDeviceLost, "a lost device's canary fails at once")
	}
}

// TestChildIdleWatch: with no events, the watch makes one blocking wait of
// 1000 ms after another, so that it uses no CPU between events (the fake's
// own wait polls its file; a real NVML's blocks in the kernel).
func TestChildIdleWatch(t *testing.T) {
	child(t)
	watchedRuntime(t)
	log := fakedriver.CallLog(os.Getenv("NVML_LOG"))
	waits := func() []string { return log.Lines(t, "nvmlEventSetWait_v2 wait") }
	require.Eventually(t, func() bool { return len(waits()) >= 1 }, 10*time.Second, time.Millisecond)
	start := time.Now()
	require.Eventually(t, func() bool { return len(waits()) >= 3 }, 10*time.Second, time.Millisecond)
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 1900*time.Millisecond, "two more waits took %v: the watch polls", took)
	for _, w := range waits() {
		assert.Equal(t, "nvmlEventSetWait_v2 wait 1000", w)
	}
}
