package drahealth_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/dra/drahealth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// twoDevices are the devices of the fake Feeds: ordinals 0 and 1.
var twoDevices = []device.Info{{Ordinal: 0, UUID: "GPU-a"}, {Ordinal: 1, UUID: "GPU-b"}}

// fakeFeed is the Feed, with default options, of a fakeSource's two
// healthy devices.
func fakeFeed(t *testing.T) (*fakeSource, *drahealth.Feed) {
	src := newFakeSource(healthy(0), healthy(1))
	f, err := drahealth.NewFeed(src, twoDevices, drahealth.Options{Pool: "node-a"})
	require.NoError(t, err)
	return src, f
}

// watch runs f.WatchHealthStatus in the test's bubble until the test ends.
func watch(t *testing.T, f *drahealth.Feed) <-chan kubeletplugin.DeviceHealthReport {
	reports := make(chan kubeletplugin.DeviceHealthReport)
	stop := run(t, f, reports)
	t.Cleanup(stop)
	return reports
}

// run runs f.WatchHealthStatus in the test's bubble; stop ends its ctx and
// fails the test if it then fails or does not return at once.
func run(t *testing.T, f *drahealth.Feed, reports chan<- kubeletplugin.DeviceHealthReport) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.WatchHealthStatus(ctx, reports) }()
	return func() {
		cancel()
		synctest.Wait()
		select {
		case err := <-done:
			assert.NoError(t, err)
		default:
			t.Error("WatchHealthStatus is still blocked after its ctx ended")
		}
	}
}

// health is each device's name and health in r, in order.
func health(r kubeletplugin.DeviceHealthReport) map[string]kubeletplugin.HealthStatus {
	out := map[string]kubeletplugin.HealthStatus{}
	for _, d := range r.Devices {
		out[d.DeviceName] = d.Health
	}
	return out
}

// TestWatchHealthStatusSendsAllThenEachChange: an initial report of every
// device, a report of just the device that changed at each change, and
// nothing when a change leaves every report as it was.
func TestWatchHealthStatusSendsAllThenEachChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, f := fakeFeed(t)
		reports := watch(t, f)
		first := <-reports
		assert.Equal(t, map[string]kubeletplugin.HealthStatus{"gpu-a": "Healthy", "gpu-b": "Healthy"}, health(first))
		start := time.Now()

		src.set(healthy(0), true) // a change of something the reports do not carry
		src.set(drahealth.State{Ordinal: 1, Verdict: healthwatch.VerdictUnhealthy, Reason: "lost: xid 79"}, true)
		r := <-reports
		assert.Equal(t, map[string]kubeletplugin.HealthStatus{"gpu-b": "Unhealthy"}, health(r), "only the device that changed")
		assert.Zero(t, time.Since(start), "at the change, not at a re-send")
		assert.Equal(t, "unhealthy: lost: xid 79", r.Devices[0].Message)
	})
}

// TestWatchHealthStatusResendsWhatTheSourceSaysNow: with nothing changed,
// every device goes out again each Resend, well within the timeout; a
// watch that gets stuck without a word (no Changed) goes out Unknown at the
// next re-send, never Healthy again.
func TestWatchHealthStatusResendsWhatTheSourceSaysNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, f := fakeFeed(t)
		reports := watch(t, f)
		<-reports
		start := time.Now()
		r := <-reports
		assert.Equal(t, drahealth.DefaultTimeout/3, time.Since(start), "the default re-send, a third of the timeout")
		assert.Len(t, r.Devices, 2, "a re-send covers every device")

		stuck := time.Now()
		src.set(drahealth.State{Ordinal: 0, Verdict: healthwatch.VerdictHealthy, Stale: "gpuinit's health watch is stuck in nvmlEventSetWait_v2"}, false)
		r = <-reports
		assert.Less(t, time.Since(stuck), drahealth.DefaultTimeout, "before the kubelet's timeout")
		assert.Equal(t, map[string]kubeletplugin.HealthStatus{"gpu-a": "Unknown", "gpu-b": "Healthy"}, health(r))
		r = <-reports
		assert.Equal(t, kubeletplugin.HealthStatusUnknown, health(r)["gpu-a"], "and at each re-send after")
	})
}

// TestWatchHealthStatusNeverBlocksOnceCtxEnds: with nobody reading the
// reports, the method returns nil as soon as its ctx ends, whether it was
// sending its first report, a change, or a re-send.
func TestWatchHealthStatusNeverBlocksOnceCtxEnds(t *testing.T) {
	for _, at := range []string{"first", "change", "re-send"} {
		t.Run(at, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, f := fakeFeed(t)
				reports := make(chan kubeletplugin.DeviceHealthReport)
				stop := run(t, f, reports)
				switch at {
				case "change":
					<-reports
					src.set(drahealth.State{Ordinal: 1, Verdict: healthwatch.VerdictUnhealthy}, true)
				case "re-send":
					<-reports
					time.Sleep(f.Resend())
				}
				synctest.Wait() // blocked in its send, nobody reading
				stop()
			})
		})
	}
}
