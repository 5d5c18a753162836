//go:build linux && cgo && !nohip

package hip

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/device/internal/host"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testTiming paces a test's watch: gets of 20 ms, where productionTiming's
// are 500 ms, so that a Shutdown waits for one no longer.
var testTiming = watchTiming{smiWait: 20 * time.Millisecond}

// hourTiming makes the watch wait an hour at a time in ROCm SMI: with RAS
// read once an hour too (GPUINIT_RAS_PERIOD=1h), only an event, taken by
// the get in flight, can change a verdict.
var hourTiming = watchTiming{smiWait: time.Hour}

// paced is a Backend of the process's runtime whose health watch keeps to
// timing.
func paced(timing watchTiming) *Backend { return &Backend{timing: &timing} }

// until waits on r's Stats().Changed until ok holds of its Stats.
func until(t *testing.T, r *device.Runtime, what string, ok func(device.Stats) bool) {
	t.Helper()
	childtest.Until(t, what, func() (bool, <-chan struct{}) {
		st := r.Stats()
		return ok(st), st.Changed()
	})
}

// TestWatchTiming: the watch the process's Backend runs (any Backend a
// test has not paced) waits half a second at a time in ROCm SMI, and reads
// the RAS counters every 10 s unless GPUINIT_RAS_PERIOD says otherwise.
func TestWatchTiming(t *testing.T) {
	t.Parallel()
	want := watchTiming{smiWait: 500 * time.Millisecond}
	assert.Equal(t, want, process.watchTiming())
	assert.Equal(t, want, (&Backend{}).watchTiming())
	assert.Equal(t, want, (*Backend)(nil).watchTiming())
	assert.Equal(t, testTiming, paced(testTiming).watchTiming())
	assert.Equal(t, 10*time.Second, defaultRASPeriod)
}

func TestRASWatch(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
	for _, c := range []struct{ name, child string }{
		{"a rise in uncorrectable errors loses that device alone; correctable ones are counted", "TestChildRASRise"},
		{"a board without RAS counters: its health is unknown, said so", "TestChildRASMissingOnOne"},
		{"a counter that cannot be read is a watch error, read again, and loses nothing", "TestChildRASUnreadable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env, _ := fakeHost(t, fakedriver.HIP, EnvRASPeriod+"=5ms") // a sysfs tree of the test's own
			runChild(t, c.child, env...)
		})
	}
	t.Run("a period that is no duration names the variable", func(t *testing.T) {
		t.Parallel()
		env, _ := fakeHost(t, fakedriver.HIP, EnvRASPeriod+"=often")
		runChild(t, "TestChildRASBadPeriod", env...)
	})
}

// setRAS writes a device's umc block counts atomically, as the kernel's
// reads see them whole.
func setRAS(t *testing.T, busID string, ue, ce int) {
	t.Helper()
	dir := filepath.Join(os.Getenv(host.EnvSysfsRoot), "bus/pci/devices", busID, "ras")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	tmp := filepath.Join(dir, ".umc")
	require.NoError(t, os.WriteFile(tmp, fmt.Appendf(nil, "ue: %d\nce: %d\n", ue, ce), 0o644))
	require.NoError(t, os.Rename(tmp, filepath.Join(dir, "umc_err_count")))
}

// rasRuntime returns an initialized Runtime over devices whose RAS counters
// setup wrote, and the devices' bus ids.
func rasRuntime(t *testing.T, setup func(busIDs []string)) (*device.Runtime, []string) {
	t.Helper()
	r := device.New(paced(testTiming))
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
	until(t, r, "both devices' counters are read", func(st device.Stats) bool {
		h := st.Health
		return len(h) == 2 && h[0].Counters != nil && h[1].Counters != nil
	})
	assert.Empty(t, r.Stats().Lost, "errors counted before the watch began are its baseline")
	assert.Equal(t, uint64(1), *r.Stats().Health[1].Counters.ECCUncorrected)

	setRAS(t, bus[0], 0, 5)
	start := time.Now()
	setRAS(t, bus[1], 3, 0)
	until(t, r, "device 1 is lost", func(device.Stats) bool { return r.CheckDevice(1) != nil })
	t.Logf("from the rise to the loss: %v (period 5ms)", time.Since(start))
	lost := r.Stats().Lost
	require.Len(t, lost, 1)
	assert.Equal(t, 1, lost[0].Ordinal)
	assert.Equal(t, device.LossRAS, lost[0].Source)
	assert.Contains(t, lost[0].Err.Message, "2 uncorrectable error(s) in umc")
	assert.ErrorIs(t, r.CheckDevice(1), device.ErrDeviceLost)

	until(t, r, "device 0's correctable errors are counted", func(st device.Stats) bool { return st.Health[0].Counted["ras correctable"] == 2 })
	assert.NoError(t, r.CheckDevice(0), "correctable errors leave the device in service")
}

func TestChildRASMissingOnOne(t *testing.T) {
	child(t)
	r, _ := rasRuntime(t, func(bus []string) { setRAS(t, bus[1], 0, 0) })
	until(t, r, "device 1 watched, device 0 not", func(st device.Stats) bool {
		h := st.Health
		return len(h) == 2 && h[1].Watched && strings.Contains(h[0].Why, "no RAS counters")
	})
	h := r.Stats().Health[0]
	assert.False(t, h.Watched)
	assert.Contains(t, h.Why, "unknown")
	assert.Empty(t, r.Stats().Lost)
}

func TestChildRASUnreadable(t *testing.T) {
	child(t)
	r, bus := rasRuntime(t, func(bus []string) { setRAS(t, bus[0], 0, 0); setRAS(t, bus[1], 0, 0) })
	until(t, r, "device 0's counters are read", func(st device.Stats) bool { return len(st.Health) == 2 && st.Health[0].Counters != nil })
	file := filepath.Join(os.Getenv(host.EnvSysfsRoot), "bus/pci/devices", bus[0], "ras/umc_err_count")
	require.NoError(t, os.WriteFile(file, []byte("busy\n"), 0o644))
	until(t, r, "a watch error names the file", func(st device.Stats) bool { return strings.Contains(st.Health[0].WatchError, "umc_err_count") })
	assert.Empty(t, r.Stats().Lost)
	setRAS(t, bus[0], 0, 0)
	until(t, r, "read again", func(st device.Stats) bool { return st.Health[0].WatchError == "" })
	assert.Positive(t, r.Stats().Health[0].WatchErrors)
	assert.Empty(t, r.Stats().Lost)
}

func TestChildRASBadPeriod(t *testing.T) {
	child(t)
	r, _ := rasRuntime(t, func(bus []string) { setRAS(t, bus[0], 0, 0) })
	until(t, r, "the reason names the variable", func(st device.Stats) bool {
		h := st.Health
		return len(h) == 2 && strings.Contains(h[0].Why, EnvRASPeriod+`="often"`)
	})
	assert.False(t, r.Stats().Health[0].Watched)
}

func TestCanary(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
	t.Run("a round trip on the device, freed", func(t *testing.T) {
		t.Parallel()
		env, log := fakeHost(t, fakedriver.HIP)
		runChild(t, "TestChildCanary", env...)
		assert.Equal(t, []string{"hipMalloc 4", "hipMemset", "hipMemcpy", "hipFree"}, log.Lines(t, "hipMalloc", "hipMemset", "hipMemcpy", "hipFree"))
	})
	t.Run("a pattern read back wrong loses the device", func(t *testing.T) {
		t.Parallel()
		env, _ := fakeHost(t, fakedriver.HIP)
		runChild(t, "TestChildCanary", append(env, "GPUINIT_FAKE_HIP_MEMSET_CORRUPT=1", "WANT=mismatch")...)
	})
}

func TestChildCanary(t *testing.T) {
	child(t)
	r := device.New(paced(testTiming))
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
// each event changes device 0's verdict, readiness and status, taken by a
// get of an hour in flight, and device 1's never.
func TestROCmSMIEventsReachTheVerdictReadinessAndStatus(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
	for _, c := range []struct{ name, events string }{
		{"a ring hang loses the device", "5"},
		{"a reset in progress loses it", "3"},
		{"the reset's end says when a new process may use it", "3,4"},
		{"a VM fault is counted and the device serves", "1"},
		{"thermal throttling too", "2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // its child mostly waits
			env, _, _ := smiHost(t, fakedriver.ROCMSMI, "GPUINIT_FAKE_RSMI_LAYOUT=6.1", "SMI_CASE="+c.events, EnvRASPeriod+"=1h")
			runChild(t, "TestChildSMIVerdict", env...)
		})
	}
}

// TestTheFakesWaitCapEndsAnHoursGet: under fakedriver.ShortWaits, a watch
// that asks ROCm SMI for gets of an hour sees each end at 20 ms. Without
// the cap the first get would not end for an hour.
func TestTheFakesWaitCapEndsAnHoursGet(t *testing.T) {
	t.Parallel() // its child has files of its own, and mostly waits
	env, _, _ := smiHost(t, fakedriver.ROCMSMI, append(fakedriver.ShortWaits, EnvRASPeriod+"=1h")...)
	runChild(t, "TestChildShortWaits", env...)
}

// TestChildShortWaits counts the gets begun by a watch paced by hourTiming:
// a third begins only once two have ended.
func TestChildShortWaits(t *testing.T) {
	child(t)
	third := make(chan struct{})
	var gets atomic.Int32
	smiRuntime(t, fakedriver.Observed{Backend: paced(hourTiming), BeforeCall: func(_ int, op string) {
		if op == "rsmi_event_notification_get" && gets.Add(1) == 3 {
			close(third)
		}
	}})
	select {
	case <-third:
	case <-time.After(20 * time.Second):
		t.Fatalf("%d gets of an hour began in 20 s: the fake's cap did not end them", gets.Load())
	}
}

// TestChildSMIVerdict: the watch waits an hour at a time in ROCm SMI and
// reads RAS once an hour, so only the events, taken by the get in flight,
// can bring the verdict (before: within 100 ms, on the clock).
func TestChildSMIVerdict(t *testing.T) {
	child(t)
	rt := smiRuntime(t, paced(hourTiming))
	h := health.New(rt, health.WithLogger(slog.New(slog.DiscardHandler)))
	defer h.Close()
	waitVerdict(t, rt, func(hs []device.DeviceHealth) bool {
		return len(hs) == 2 && hs[0].Verdict == healthwatch.VerdictHealthy && hs[1].Verdict == healthwatch.VerdictHealthy
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
			return hs[0].Verdict == healthwatch.VerdictUnhealthy && (last != "4" || !hs[0].Recovered.IsZero())
		}
		return len(hs[0].Counted) > 0
	})
	t.Logf("from the event to the verdict: %v", time.Since(start))
	ready, why = h.Readiness()
	assert.Equal(t, !lost, ready, why)
	st := h.Snapshot()
	require.Len(t, st.Devices, 2)
	assert.Equal(t, hs[0].Verdict, st.Devices[0].Health.Verdict, "the status says the verdict")
	assert.Equal(t, healthwatch.VerdictHealthy, st.Devices[1].Health.Verdict, "the other device is untouched")
	if last == "4" {
		assert.Contains(t, hs[0].Reason, "a new process may use it")
		assert.NotNil(t, st.Devices[0].Health.Recovered)
	}
	parkWatch(t, rt)
}

// parkWatch ends the get in flight of a watch paced by hourTiming with a
// failed one, so that the watch sits in its pause after a failure (as long
// as a get), which its ctx's end interrupts at once: the test's Shutdown
// then waits for no get.
func parkWatch(t *testing.T, rt *device.Runtime) {
	t.Helper()
	appendLine(t, os.Getenv("SMI_EVENTS"), "error 6")
	until(t, rt, "the watch pauses after a failed get", func(st device.Stats) bool { return st.Health[0].WatchErrors > 0 })
}

// waitVerdict waits on Stats.Changed until ok holds of the devices' health.
func waitVerdict(t *testing.T, rt *device.Runtime, ok func([]device.DeviceHealth) bool) []device.DeviceHealth {
	t.Helper()
	var hs []device.DeviceHealth
	until(t, rt, "the verdicts", func(st device.Stats) bool { hs = st.Health; return ok(hs) })
	return hs
}

// TestTheWatchUsesLittleCPUWhileNothingHappens measures the AMD watch's CPU
// use per device per minute on a quiet host: ROCm SMI's waits (500 ms each)
// and the RAS reads (every 10 s), over fakes that wait without spinning.
func TestTheWatchUsesLittleCPUWhileNothingHappens(t *testing.T) {
	t.Parallel() // its child has files of its own, and measures its own CPU time
	// RAS every 20 gets of 5 ms, as every 20 of productionTiming's 500 ms.
	env, _, _ := smiHost(t, fakedriver.ROCMSMI, EnvRASPeriod+"=100ms")
	out := runChild(t, "TestChildWatchCPU", env...)
	if i := strings.Index(out, "watch CPU per device per minute:"); i >= 0 {
		t.Log(strings.SplitN(out[i:], "\n", 2)[0])
	}
}

// TestChildWatchCPU runs the watch as productionTiming and the default RAS
// period do, scaled down: the same calls, a get of 5 ms for its 500 ms
// and RAS every 20 gets, as every 10 s. It measures the process's CPU time
// over a minute's worth of rounds (120 gets, between the starts of two),
// taken on the watch's goroutine as each get begins. That is safe under
// load: other processes' work does not count in this one's CPU time, and
// the figure is per round, whatever wall time the rounds take; the gets
// block in the kernel, so their length changes the wall time, not the CPU.
func TestChildWatchCPU(t *testing.T) {
	child(t)
	const rounds = 120 // a minute of productionTiming's gets
	var (
		gets int // on the watch's goroutine alone, as from is
		from time.Duration
		used = make(chan time.Duration, 1)
	)
	rt := smiRuntime(t, fakedriver.Observed{Backend: paced(watchTiming{smiWait: 5 * time.Millisecond}), BeforeCall: func(_ int, op string) {
		if op != "rsmi_event_notification_get" {
			return
		}
		switch gets++; gets {
		case 1:
			from = cpuTime()
		case 1 + rounds:
			used <- cpuTime() - from
		}
	}})
	hs := waitVerdict(t, rt, func(hs []device.DeviceHealth) bool {
		return len(hs) == 2 && hs[0].Verdict == healthwatch.VerdictHealthy && hs[1].Verdict == healthwatch.VerdictHealthy
	})
	var cpu time.Duration
	select {
	case cpu = <-used:
	case <-time.After(time.Minute): // a bound on a hang
		t.Fatalf("the watch did not make %d gets", rounds)
	}
	perDeviceMinute := cpu / time.Duration(len(hs))
	fmt.Printf("watch CPU per device per minute: %v (%v over %d rounds, %d devices)\n", perDeviceMinute, cpu, rounds, len(hs))
	assert.Less(t, perDeviceMinute, 600*time.Millisecond, "more than 1% of a core per device")
}

// cpuTime is the process's user and system CPU time so far; childtest's
// CPUTime, for a goroutine that is not the test's.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru) // it fails only for a bad who
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// smiRuntime is an initialized Runtime over both fake devices of b, whose
// RAS counters read zero, shut down when the test ends.
func smiRuntime(t *testing.T, b driver.Backend) *device.Runtime {
	t.Helper()
	setRAS(t, "0000:c1:00.0", 0, 0)
	setRAS(t, "0000:03:00.0", 0, 0)
	rt := device.New(b)
	t.Cleanup(func() { assert.NoError(t, rt.Shutdown(context.Background())) })
	require.NoError(t, rt.Init(context.Background()))
	return rt
}
