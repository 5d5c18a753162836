package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/dra/drahealth"
	"github.com/gpuinit/gpuinit/dra/internal/kubelettest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
)

// sims is a Runtime over two simulated GPUs, both watched.
func sims(t *testing.T) (*sim.Backend, *device.Runtime) {
	b := sim.New()
	rt := device.New(b)
	t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, rt.Init(ctx))
	for s := rt.Stats(); len(s.Health) < 2 || s.Health[0].Verdict != healthwatch.VerdictHealthy || s.Health[1].Verdict != healthwatch.VerdictHealthy; s = rt.Stats() {
		select {
		case <-s.Changed():
		case <-ctx.Done():
			t.Fatal("the simulated devices are never watched")
		}
	}
	return b, rt
}

// awaitSlice reads the ResourceSlices' events until one has want's devices
// (by name, their taints only), for 5 s at most: less than the re-send.
func awaitSlice(t *testing.T, w watch.Interface, want map[string][]resourceapi.DeviceTaint) *resourceapi.ResourceSlice {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev := <-w.ResultChan():
			slice, ok := ev.Object.(*resourceapi.ResourceSlice)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			got := map[string][]resourceapi.DeviceTaint{}
			for _, d := range slice.Spec.Devices {
				got[d.Name] = d.Taints
			}
			if assert.ObjectsAreEqual(want, got) {
				return slice
			}
		case <-deadline:
			t.Fatalf("no ResourceSlice with the devices %v", want)
		}
	}
}

// running is the plugin's run over two simulated GPUs, a fake clientset
// whose ResourceSlices the test watches, and the kubelet's health client.
type running struct {
	gpus     *sim.Backend
	slices   watch.Interface
	stream   *kubelettest.Stream
	cancel   context.CancelFunc
	returned chan error
	first    *resourceapi.ResourceSlice // as first published
}

// The simulated GPUs' names, by UUID.
const gpu0, gpu1 = "gpu-5e1d0c0a-9a7f-4b6e-8d2c-000000000000", "gpu-5e1d0c0a-9a7f-4b6e-8d2c-000000000001"

func startPlugin(t *testing.T) *running {
	gpus, rt := sims(t)
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: kubelettest.NodeName, UID: "node-a-uid"}})
	slices, err := client.ResourceV1().ResourceSlices().Watch(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	t.Cleanup(slices.Stop)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := &running{gpus: gpus, slices: slices, cancel: cancel, returned: make(chan error, 1)}
	go func() {
		r.returned <- run(ctx, rt, client, config{driverName: kubelettest.DriverName, nodeName: kubelettest.NodeName,
			pluginDir: dir, registrarDir: dir, timeout: drahealth.DefaultTimeout})
	}()
	r.first = awaitSlice(t, slices, map[string][]resourceapi.DeviceTaint{gpu0: nil, gpu1: nil})
	r.stream = kubelettest.Watch(t, filepath.Join(dir, "dra.sock"))
	assert.Len(t, r.stream.Next(t, 5*time.Second).Devices, 2, "the first report covers every device")
	return r
}

// TestPluginPublishesAndServesTheGPUs: the plugin publishes both simulated
// GPUs in the node's pool, with their attributes; an Xid 79 on one taints it
// NoExecute in the slice and makes it Unhealthy on the kubelet's stream;
// cancelling run ends the stream and returns nil.
func TestPluginPublishesAndServesTheGPUs(t *testing.T) {
	r := startPlugin(t)
	slice := r.first
	assert.Equal(t, kubelettest.DriverName, slice.Spec.Driver)
	assert.Equal(t, kubelettest.NodeName, slice.Spec.Pool.Name)
	require.NotNil(t, slice.Spec.NodeName)
	assert.Equal(t, kubelettest.NodeName, *slice.Spec.NodeName)
	attrs := slice.Spec.Devices[0].Attributes
	assert.Equal(t, "GPU-5e1d0c0a-9a7f-4b6e-8d2c-000000000000", *attrs["uuid"].StringValue)
	assert.Equal(t, "0000:18:00.0", *attrs["resource.kubernetes.io/pciBusID"].StringValue)
	assert.Equal(t, "gpuinit-sim", *attrs["vendor"].StringValue)
	memory := slice.Spec.Devices[0].Capacity["memory"].Value
	assert.Equal(t, int64(80<<30), memory.Value())

	r.gpus.InjectXid(1, 79)
	awaitSlice(t, r.slices, map[string][]resourceapi.DeviceTaint{gpu0: nil, gpu1: {{Key: drahealth.TaintKey, Value: "unhealthy",
		Effect: resourceapi.DeviceTaintEffectNoExecute}}})
	r.stream.Until(t, 5*time.Second, func(resp *drahealthv1.NodeWatchResourcesResponse) bool {
		h, ok := kubelettest.Of(resp, kubelettest.NodeName+"/"+gpu1)
		return ok && h == drahealthv1.HealthStatus_UNHEALTHY
	})
	h0, _ := r.stream.Health(kubelettest.NodeName + "/" + gpu0)
	assert.Equal(t, drahealthv1.HealthStatus_HEALTHY, h0)

	r.cancel()
	select {
	case err := <-r.returned:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its ctx ended")
	}
	assert.Error(t, r.stream.Ended(t, 5*time.Second), "the stream ends with the plugin")
}

// TestPluginTaintsADegradedGPUNoSchedule: a pending row remap (Degraded)
// taints the GPU NoSchedule and leaves it Healthy on the kubelet's stream,
// with the reason in the message.
func TestPluginTaintsADegradedGPUNoSchedule(t *testing.T) {
	r := startPlugin(t)
	r.gpus.InjectHealthEvent(healthwatch.Event{Ordinal: 0, Kind: healthwatch.KindRemap, Action: healthwatch.Degrade,
		Message: "a row remap is pending: reset the GPU to apply it", At: time.Now()})
	awaitSlice(t, r.slices, map[string][]resourceapi.DeviceTaint{gpu1: nil, gpu0: {{Key: drahealth.TaintKey, Value: "degraded",
		Effect: resourceapi.DeviceTaintEffectNoSchedule}}})
	read := r.stream.Until(t, 5*time.Second, func(resp *drahealthv1.NodeWatchResourcesResponse) bool {
		for _, d := range resp.Devices {
			if d.Device.DeviceName == gpu0 && strings.HasPrefix(d.Message, "degraded: ") {
				return true
			}
		}
		return false
	})
	for _, d := range read[len(read)-1].Devices {
		if d.Device.DeviceName == gpu0 {
			assert.Equal(t, drahealthv1.HealthStatus_HEALTHY, d.Health)
			assert.Equal(t, "degraded: row-remap: a row remap is pending: reset the GPU to apply it", d.Message)
		}
	}
}

// TestPluginPreparesNoClaims: each claim fails, saying why; unpreparing
// succeeds, as nothing was prepared.
func TestPluginPreparesNoClaims(t *testing.T) {
	p := &plugin{}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{UID: "claim-1"}}
	got, err := p.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{claim})
	require.NoError(t, err)
	assert.ErrorIs(t, got["claim-1"].Err, errNoClaims)
	assert.ErrorContains(t, got["claim-1"].Err, "no CDI specs")
}
