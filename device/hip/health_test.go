//go:build linux && cgo && !nohip

package hip

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/device/internal/hostfs"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRASWatch(t *testing.T) {
	for _, c := range []struct{ name, child string }{
		{"a rise in uncorrectable errors loses that device alone; correctable ones are counted", "TestChildRASRise"},
		{"a board without RAS counters: its health is unknown, said so", "TestChildRASMissingOnOne"},
		{"a counter that cannot be read is a watch error, read again, and loses nothing", "TestChildRASUnreadable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, _ := fakeHost(t, fakedriver.HIP, EnvRASPeriod+"=5ms") // a sysfs tree of the test's own
			runChild(t, c.child, env...)
		})
	}
	t.Run("a period that is no duration names the variable", func(t *testing.T) {
		env, _ := fakeHost(t, fakedriver.HIP, EnvRASPeriod+"=often")
		runChild(t, "TestChildRASBadPeriod", env...)
	})
}

// setRAS writes a device's umc block counts atomically, as the kernel's
// reads see them whole.
func setRAS(t *testing.T, busID string, ue, ce int) {
	t.Helper()
	dir := filepath.Join(os.Getenv(hostfs.EnvSysfsRoot), "bus/pci/devices", busID, "ras")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	tmp := filepath.Join(dir, ".umc")
	require.NoError(t, os.WriteFile(tmp, fmt.Appendf(nil, "ue: %d\nce: %d\n", ue, ce), 0o644))
	require.NoError(t, os.Rename(tmp, filepath.Join(dir, "umc_err_count")))
}

// rasRuntime returns an initialized Runtime over devices whose RAS counters
// setup wrote, and the devices' bus ids.
func rasRuntime(t *testing.T, setup func(busIDs []string)) (*device.Runtime, []string) {
	t.Helper()
	r := device.New(process)
	t.Cleanup(func() { assert.NoError(t, r.Shutdown(context.Background())) })
	// The bus ids are read before Init, by a Runtime of its own, so the
	// counters exist when the watch starts.
	first := device.New(process)
	infos, err := first.Devices(context.Background())
	require.NoError(t, err)
	require.NoError(t, first.Shutdown(context.Background()))
	require.Len(t, infos, 2)
	busIDs := []string{infos[0].PCIBusID, infos[1].PCIBusID}
	setup(busIDs)
	require.NoError(t, r.Init(context.Background()))
	return r, busIDs
}

func TestChildRASRise(t *testing.T) {
	child(t)
	r, bus := rasRuntime(t, func(bus []string) { setRAS(t, bus[0], 0, 3); setRAS(t, bus[1], 1, 0) })
	require.Eventually(t, func() bool {
		h := r.Stats().Health
		return len(h) == 2 && h[0].Counters != nil && h[1].Counters != nil
	}, 10*time.Second, time.Millisecond, "both devices' counters are read")
	assert.Empty(t, r.Stats().Lost, "errors counted before the watch began are its baseline")
	assert.Equal(t, uint64(1), *r.Stats().Health[1].Counters.ECCUncorrected)

	setRAS(t, bus[0], 0, 5)
	start := time.Now()
	setRAS(t, bus[1], 3, 0)
	require.Eventually(t, func() bool { return r.CheckDevice(1) != nil }, 10*time.Second, 100*time.Microsecond)
	t.Logf("from the rise to the loss: %v (period 5ms)", time.Since(start))
	lost := r.Stats().Lost
	require.Len(t, lost, 1)
	assert.Equal(t, 1, lost[0].Ordinal)
	assert.Equal(t, device.LossRAS, lost[0].Source)
	assert.Contains(t, lost[0].Err.Message, "2 uncorrectable error(s) in umc")
	assert.ErrorIs(t, r.CheckDevice(1), device.ErrDeviceLost)

	require.Eventually(t, func() bool { return r.Stats().Health[0].Counted["ras correctable"] == 2 }, 10*time.Second, time.Millisecond)
	assert.NoError(t, r.CheckDevice(0), "correctable errors leave the device in service")
}

func TestChildRASMissingOnOne(t *testing.T) {
	child(t)
	r, _ := rasRuntime(t, func(bus []string) { setRAS(t, bus[1], 0, 0) })
	require.Eventually(t, func() bool {
		h := r.Stats().Health
		return len(h) == 2 && h[1].Watched && strings.Contains(h[0].Why, "no RAS counters")
	}, 10*time.Second, time.Millisecond)
	h := r.Stats().Health[0]
	assert.False(t, h.Watched)
	assert.Contains(t, h.Why, "unknown")
	assert.Empty(t, r.Stats().Lost)
}

func TestChildRASUnreadable(t *testing.T) {
	child(t)
	r, bus := rasRuntime(t, func(bus []string) { setRAS(t, bus[0], 0, 0); setRAS(t, bus[1], 0, 0) })
	require.Eventually(t, func() bool { h := r.Stats().Health; return len(h) == 2 && h[0].Counters != nil }, 10*time.Second, time.Millisecond)
	file := filepath.Join(os.Getenv(hostfs.EnvSysfsRoot), "bus/pci/devices", bus[0], "ras/umc_err_count")
	require.NoError(t, os.WriteFile(file, []byte("busy\n"), 0o644))
	require.Eventually(t, func() bool { return strings.Contains(r.Stats().Health[0].WatchError, "umc_err_count") }, 10*time.Second, time.Millisecond)
	assert.Empty(t, r.Stats().Lost)
	setRAS(t, bus[0], 0, 0)
	require.Eventually(t, func() bool { return r.Stats().Health[0].WatchError == "" }, 10*time.Second, time.Millisecond, "read again")
	assert.Positive(t, r.Stats().Health[0].WatchErrors)
	assert.Empty(t, r.Stats().Lost)
}

func TestChildRASBadPeriod(t *testing.T) {
	child(t)
	r, _ := rasRuntime(t, func(bus []string) { setRAS(t, bus[0], 0, 0) })
	require.Eventually(t, func() bool {
		h := r.Stats().Health
		return len(h) == 2 && strings.Contains(h[0].Why, EnvRASPeriod+`="often"`)
	}, 10*time.Second, time.Millisecond)
	assert.False(t, r.Stats().Health[0].Watched)
}

func TestCanary(t *testing.T) {
	env, log := fakeHost(t, fakedriver.HIP)
	t.Run("a round trip on the device, freed", func(t *testing.T) {
		log.Reset(t)
		runChild(t, "TestChildCanary", env...)
		assert.Equal(t, []string{"hipMalloc 4", "hipMemset", "hipMemcpy", "hipFree"}, log.Lines(t, "hipMalloc", "hipMemset", "hipMemcpy", "hipFree"))
	})
	t.Run("a pattern read back wrong loses the device", func(t *testing.T) {
		runChild(t, "TestChildCanary", append(env, "GPUINIT_FAKE_HIP_MEMSET_CORRUPT=1", "WANT=mismatch")...)
	})
}

func TestChildCanary(t *testing.T) {
	child(t)
	r := device.New(process)
	t.Cleanup(func() { assert.NoError(t, r.Shutdown(context.Background())) })
	err := r.Canary(context.Background(), 0)
	if os.Getenv("WANT") != "mismatch" {
		require.NoError(t, err)
		return
	}
	require.ErrorIs(t, err, device.ErrDeviceLost)
	assert.ErrorContains(t, err, "pattern mismatch")
	var de *device.DriverError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "canary", de.Op)
	assert.Empty(t, de.Name, "Name is for a code's name, and a mismatch has no code")
	assert.Equal(t, device.LossCanary, r.Stats().Lost[0].Source)
}

// TestROCmSMIEventsReachTheVerdictReadinessAndStatus: over the fake
// libamdhip64 and librocm_smi64 (ROCm 6.1's layout, which has ring hangs),
// each event changes device 0's verdict, readiness and status within 100 ms,
// and device 1's never.
func TestROCmSMIEventsReachTheVerdictReadinessAndStatus(t *testing.T) {
	for _, c := range []struct{ name, events string }{
		{"a ring hang loses the device", "5"},
		{"a reset in progress loses it", "3"},
		{"the reset's end says when a new process may use it", "3,4"},
		{"a VM fault is counted and the device serves", "1"},
		{"thermal throttling too", "2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // its child mostly waits
			env, _, _ := smiHost(t, fakedriver.ROCMSMI, "GPUINIT_FAKE_RSMI_LAYOUT=6.1", "SMI_CASE="+c.events)
			runChild(t, "TestChildSMIVerdict", env...)
		})
	}
}

func TestChildSMIVerdict(t *testing.T) {
	child(t)
	rt := smiRuntime(t)
	h := health.New(rt, health.WithLogger(slog.New(slog.DiscardHandler)))
	waitVerdict(t, rt, func(hs []device.DeviceHealth) bool {
		return len(hs) == 2 && hs[0].Verdict == driver.VerdictHealthy && hs[1].Verdict == driver.VerdictHealthy
	})
	ready, why := h.Readiness()
	require.True(t, ready, why)
	events := strings.Split(os.Getenv("SMI_CASE"), ",")
	for _, ev := range events {
		appendLine(t, os.Getenv("SMI_EVENTS"), "0000:c1:00.0 "+ev+" gpuinit test event "+ev)
	}
	start := time.Now()
	last := events[len(events)-1]
	lost := last == "5" || last == "3" || last == "4"
	hs := waitVerdict(t, rt, func(hs []device.DeviceHealth) bool {
		if lost {
			return hs[0].Verdict == driver.VerdictUnhealthy && (last != "4" || !hs[0].Recovered.IsZero())
		}
		return len(hs[0].Counted) > 0
	})
	took := time.Since(start)
	t.Logf("from the event to the verdict: %v", took)
	assert.Less(t, took, 100*time.Millisecond)
	ready, why = h.Readiness()
	assert.Equal(t, !lost, ready, why)
	st := h.Snapshot()
	require.Len(t, st.Devices, 2)
	assert.Equal(t, hs[0].Verdict, st.Devices[0].Health.Verdict, "the status says the verdict")
	assert.Equal(t, driver.VerdictHealthy, st.Devices[1].Health.Verdict, "the other device is untouched")
	if last == "4" {
		assert.Contains(t, hs[0].Reason, "a new process may use it")
		assert.NotNil(t, st.Devices[0].Health.Recovered)
	}
}

// waitVerdict waits on Stats.Changed until ok holds of the devices' health.
func waitVerdict(t *testing.T, rt *device.Runtime, ok func([]device.DeviceHealth) bool) []device.DeviceHealth {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		st := rt.Stats()
		if ok(st.Health) {
			return st.Health
		}
		select {
		case <-st.Changed:
		case <-timeout:
			t.Fatalf("never so: %+v", st.Health)
		}
	}
}

// TestTheWatchUsesLittleCPUWhileNothingHappens measures the AMD watch's CPU
// use per device per minute on a quiet host: ROCm SMI's waits (500 ms each)
// and the RAS reads (every 10 s), over fakes that wait without spinning.
func TestTheWatchUsesLittleCPUWhileNothingHappens(t *testing.T) {
	env, _, _ := smiHost(t, fakedriver.ROCMSMI, "GPUINIT_FAKE_RSMI_POLL_MS=500")
	out := runChild(t, "TestChildWatchCPU", env...)
	if i := strings.Index(out, "watch CPU per device per minute:"); i >= 0 {
		t.Log(strings.SplitN(out[i:], "\n", 2)[0])
	}
}

func TestChildWatchCPU(t *testing.T) {
	child(t)
	rt := smiRuntime(t)
	hs := waitVerdict(t, rt, func(hs []device.DeviceHealth) bool {
		return len(hs) == 2 && hs[0].Verdict == driver.VerdictHealthy && hs[1].Verdict == driver.VerdictHealthy
	})
	const window = 3 * time.Second
	before := childtest.CPUTime(t)
	time.Sleep(window) // the measurement's window: nothing happens in it
	used := childtest.CPUTime(t) - before
	perDeviceMinute := used * time.Duration(time.Minute/window) / time.Duration(len(hs))
	t.Logf("CPU per device per minute: %v (%v over %v, %d devices)", perDeviceMinute, used, window, len(hs))
	fmt.Printf("watch CPU per device per minute: %v (%v over %v, %d devices)\n", perDeviceMinute, used, window, len(hs))
	assert.Less(t, perDeviceMinute, 600*time.Millisecond, "more than 1% of a core per device")
}

// smiRuntime is an initialized Runtime over both fake devices, whose RAS
// counters read zero, shut down when the test ends.
func smiRuntime(t *testing.T) *device.Runtime {
	t.Helper()
	setRAS(t, "0000:c1:00.0", 0, 0)
	setRAS(t, "0000:03:00.0", 0, 0)
	rt := device.New(process)
	t.Cleanup(func() { assert.NoError(t, rt.Shutdown(context.Background())) })
	require.NoError(t, rt.Init(context.Background()))
	return rt
}
