package drahealth_test

// The tests here run the kubelet's side for real: the kubelet plugin
// helper's own gRPC server, and the kubelet's generated DRAResourceHealth
// client over a unix socket (internal/kubelettest). The Runtimes are gpuinit's
// over its simulated backend, whose InjectXid is the event a real NVML watch
// reports and whose HangHealthWatch is a watch's driver call that never
// returns; fakeSource's silent stale state stands for a Source whose stuck
// watch nobody marks.

import (
	"context"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/dra/drahealth"
	"github.com/gpuinit/gpuinit/dra/internal/kubelettest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
)

// plugin is a DRA plugin that serves a Feed's health and prepares nothing.
// returned takes a value each time a WatchHealthStatus returns.
type plugin struct {
	*drahealth.Feed
	returned chan error
}

func newPlugin(f *drahealth.Feed) *plugin { return &plugin{Feed: f, returned: make(chan error, 16)} }

func (p *plugin) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	err := p.Feed.WatchHealthStatus(ctx, reports)
	p.returned <- err
	return err
}

func (p *plugin) PrepareResourceClaims(context.Context, []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	return nil, nil
}

func (p *plugin) UnprepareResourceClaims(context.Context, []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	return nil, nil
}

func (p *plugin) HandleError(context.Context, error, string) {}

// awaitReturn waits for one WatchHealthStatus to return nil.
func (p *plugin) awaitReturn(t *testing.T) {
	t.Helper()
	select {
	case err := <-p.returned:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("WatchHealthStatus did not return")
	}
}

// served is a Feed of a Runtime over two devices, served by the helper:
// ids are the devices' "pool/name". sim is the simulated backend, if it is one.
type served struct {
	sim    *sim.Backend
	rt     *device.Runtime
	plugin *plugin
	helper *kubeletplugin.Helper
	socket string
	ids    [2]string
}

func simFeed(t testing.TB, opts drahealth.Options) served {
	b, rt, devices := simRuntime(t, 2)
	s := serveFeed(t, rt, devices, opts)
	s.sim = b
	return s
}

// serveFeed is a Feed of rt's devices, served by the helper; sim is unset.
func serveFeed(t testing.TB, rt *device.Runtime, devices []device.Info, opts drahealth.Options) served {
	t.Helper()
	s := served{rt: rt}
	opts.Pool = kubelettest.NodeName
	f, err := drahealth.NewFeed(drahealth.FromRuntime(s.rt), devices, opts)
	require.NoError(t, err)
	for i := range s.ids {
		id, ok := f.ID(i)
		require.True(t, ok)
		s.ids[i] = id.String()
	}
	s.plugin = newPlugin(f)
	s.helper, s.socket = kubelettest.Serve(t, s.plugin, nil)
	return s
}

// is tells whether r has device id with health h.
func is(id string, h drahealthv1.HealthStatus) func(*drahealthv1.NodeWatchResourcesResponse) bool {
	return func(r *drahealthv1.NodeWatchResourcesResponse) bool {
		got, ok := kubelettest.Of(r, id)
		return ok && got == h
	}
}

// TestKubeletSeesAnXid79OnOneDeviceOnly: an Xid 79 on device 1 reaches the
// kubelet's client as Unhealthy for that device, within 100 ms; device 0
// stays Healthy in every report, the re-send after it too.
func TestKubeletSeesAnXid79OnOneDeviceOnly(t *testing.T) {
	const resend = 300 * time.Millisecond // longer than the bound: only the change can meet it
	f := simFeed(t, drahealth.Options{Timeout: time.Second, Resend: resend})
	latency := kubeletSeesXid79(t, f, func() { f.sim.InjectXid(1, 79) })
	t.Logf("Xid 79 to the kubelet's client: %v", latency)
}

// kubeletSeesXid79 proves TestKubeletSeesAnXid79OnOneDeviceOnly over f,
// whose re-sends are longer apart than 100 ms, with inject making the Xid
// 79 on device 1; it returns the latency.
func kubeletSeesXid79(t *testing.T, f served, inject func()) time.Duration {
	t.Helper()
	s := kubelettest.Watch(t, f.socket)
	first := s.Next(t, 5*time.Second)
	require.Len(t, first.Devices, 2, "the first report covers every device")
	for _, id := range f.ids {
		assert.True(t, is(id, drahealthv1.HealthStatus_HEALTHY)(first), id)
	}

	start := time.Now()
	inject()
	read := s.Until(t, 5*time.Second, is(f.ids[1], drahealthv1.HealthStatus_UNHEALTHY))
	latency := time.Since(start)
	assert.Less(t, latency, 100*time.Millisecond)
	for _, d := range read[len(read)-1].Devices {
		if d.Device.PoolName+"/"+d.Device.DeviceName == f.ids[1] {
			assert.Contains(t, d.Message, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS")
		}
	}

	// The next re-send: every device, device 0 still Healthy.
	read = append(read, s.Until(t, 5*time.Second, func(r *drahealthv1.NodeWatchResourcesResponse) bool {
		return len(r.Devices) == 2
	})...)
	for _, r := range read {
		if h, ok := kubelettest.Of(r, f.ids[0]); ok {
			assert.Equal(t, drahealthv1.HealthStatus_HEALTHY, h, "device 0 in %v", r)
		}
	}
	h1, _ := s.Health(f.ids[1])
	assert.Equal(t, drahealthv1.HealthStatus_UNHEALTHY, h1)
	return latency
}

// TestKubeletSeesAHungWatchCallAsUnknown: the Runtime's health watch stuck
// in a driver call on device 0 (the simulated driver's, deaf to its
// context) reaches the kubelet's client as Unknown once the Runtime's
// monitor deadline has passed, naming the call, and never as Healthy after;
// device 1 stays Healthy. The call's return makes device 0 Healthy again.
func TestKubeletSeesAHungWatchCallAsUnknown(t *testing.T) {
	const deadline = 300 * time.Millisecond // the Runtime's call deadline, and so its watch's
	f := simFeed(t, drahealth.Options{Timeout: time.Second, Resend: 200 * time.Millisecond})
	f.rt.SetCallDeadline(deadline)
	s := kubelettest.Watch(t, f.socket)
	require.True(t, is(f.ids[0], drahealthv1.HealthStatus_HEALTHY)(s.Next(t, 5*time.Second)))

	hung := time.Now()
	release := f.sim.HangHealthWatch(0, "nvmlEventSetWait_v2")
	defer release()
	read := s.Until(t, 5*time.Second, is(f.ids[0], drahealthv1.HealthStatus_UNKNOWN))
	took := time.Since(hung)
	t.Logf("hung call to Unknown on the kubelet's client: %v (deadline %v)", took, deadline)
	assert.GreaterOrEqual(t, took, deadline, "not before the monitor's deadline")
	assert.Less(t, took, deadline+time.Second, "before the kubelet's timeout after it")
	for _, d := range read[len(read)-1].Devices {
		if d.Device.PoolName+"/"+d.Device.DeviceName == f.ids[0] {
			assert.Contains(t, d.Message, "nvmlEventSetWait_v2")
		}
	}
	for range 2 { // the re-sends after: still Unknown, device 1 Healthy
		r := s.Until(t, 5*time.Second, func(r *drahealthv1.NodeWatchResourcesResponse) bool { return len(r.Devices) == 2 })
		read = append(read, r...)
	}
	for _, r := range read {
		if h, ok := kubelettest.Of(r, f.ids[1]); ok {
			assert.Equal(t, drahealthv1.HealthStatus_HEALTHY, h, "device 1")
		}
	}
	h0, _ := s.Health(f.ids[0])
	assert.Equal(t, drahealthv1.HealthStatus_UNKNOWN, h0)

	release()
	s.Until(t, 5*time.Second, is(f.ids[0], drahealthv1.HealthStatus_HEALTHY))
}

// TestKubeletSeesAStuckWatchAsUnknown: a watch that gets stuck without a
// word (fakeSource's silent set, as a watch wedged in a driver call says
// nothing) reaches the kubelet's client as Unknown before the kubelet's
// timeout, and never as Healthy after.
func TestKubeletSeesAStuckWatchAsUnknown(t *testing.T) {
	src := newFakeSource(healthy(0), healthy(1))
	f, err := drahealth.NewFeed(src, twoDevices, drahealth.Options{Pool: kubelettest.NodeName, Timeout: time.Second,
		Resend: 200 * time.Millisecond})
	require.NoError(t, err)
	_, socket := kubelettest.Serve(t, newPlugin(f), nil)
	s := kubelettest.Watch(t, socket)
	s.Next(t, 5*time.Second)
	stuckID := kubelettest.NodeName + "/gpu-a"
	h, _ := s.Health(stuckID)
	require.Equal(t, drahealthv1.HealthStatus_HEALTHY, h)

	stuck := time.Now()
	src.set(drahealth.State{Ordinal: 0, Verdict: healthwatch.VerdictHealthy, Stale: "gpuinit's health watch is stuck in nvmlEventSetWait_v2"}, false)
	s.Until(t, 5*time.Second, is(stuckID, drahealthv1.HealthStatus_UNKNOWN))
	assert.Less(t, time.Since(stuck), time.Second, "before the kubelet's timeout")
	for range 2 { // the re-sends after
		r := s.Next(t, 5*time.Second)
		h, _ := kubelettest.Of(r, stuckID)
		assert.Equal(t, drahealthv1.HealthStatus_UNKNOWN, h)
		h, _ = kubelettest.Of(r, kubelettest.NodeName+"/gpu-b")
		assert.Equal(t, drahealthv1.HealthStatus_HEALTHY, h)
	}
}

// TestKubeletReconnectingGetsTheFullState: a client that reconnects gets
// every device at once in its first response, with what happened while it
// was connected before.
func TestKubeletReconnectingGetsTheFullState(t *testing.T) {
	// A re-send an hour apart: only the first report can come in time.
	f := simFeed(t, drahealth.Options{Timeout: 3 * time.Hour})
	s := kubelettest.Watch(t, f.socket)
	s.Next(t, 5*time.Second)
	f.sim.InjectXid(1, 79)
	s.Until(t, 5*time.Second, is(f.ids[1], drahealthv1.HealthStatus_UNHEALTHY))
	s.Close()
	f.plugin.awaitReturn(t)

	again := kubelettest.Watch(t, f.socket).Next(t, 5*time.Second)
	require.Len(t, again.Devices, 2)
	assert.True(t, is(f.ids[0], drahealthv1.HealthStatus_HEALTHY)(again))
	assert.True(t, is(f.ids[1], drahealthv1.HealthStatus_UNHEALTHY)(again))
}

// staysLost asserts that the lost device id is Unhealthy in the kubelet's
// cache, in every response of read that carries it, and in the next
// response that carries every device (a re-send). A response sent for a
// change carries only the devices that changed, so the one that turned
// another device Unknown need not carry id.
func staysLost(t *testing.T, s *kubelettest.Stream, id string, read []*drahealthv1.NodeWatchResourcesResponse) {
	t.Helper()
	read = append(read, s.Until(t, 5*time.Second, func(r *drahealthv1.NodeWatchResourcesResponse) bool {
		_, ok := kubelettest.Of(r, id)
		return ok && len(r.Devices) == 2
	})...)
	for i, r := range read {
		if h, ok := kubelettest.Of(r, id); ok {
			assert.Equal(t, drahealthv1.HealthStatus_UNHEALTHY, h, "a lost device stays lost: response %d of %d", i+1, len(read))
		}
	}
	h, _ := s.Health(id)
	assert.Equal(t, drahealthv1.HealthStatus_UNHEALTHY, h, "a lost device stays lost in the kubelet's cache")
}

// TestShutdownEndsTheStream: shutting the Runtime down turns every device
// that is not lost Unknown, at the next re-send at the latest; stopping the
// helper then ends the kubelet's stream and returns the Feed's
// WatchHealthStatus.
func TestShutdownEndsTheStream(t *testing.T) {
	f := simFeed(t, drahealth.Options{Timeout: time.Second, Resend: 100 * time.Millisecond})
	s := kubelettest.Watch(t, f.socket)
	s.Next(t, 5*time.Second)
	f.sim.InjectXid(1, 79)
	s.Until(t, 5*time.Second, is(f.ids[1], drahealthv1.HealthStatus_UNHEALTHY))

	require.NoError(t, f.rt.Shutdown(context.Background()))
	r := s.Until(t, 5*time.Second, is(f.ids[0], drahealthv1.HealthStatus_UNKNOWN))
	staysLost(t, s, f.ids[1], r)

	f.helper.Stop()
	assert.Error(t, s.Ended(t, 5*time.Second), "the stream ends with the server")
	f.plugin.awaitReturn(t)
}
