// Package kubelettest is the kubelet's side of the DRA health stream for
// tests: the kubelet plugin helper's own gRPC server over a unix socket in
// a test's temporary folder, and the kubelet's generated DRAResourceHealth
// client reading it, as the kubelet does.
package kubelettest

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
)

// DriverName is the driver name Serve registers.
const DriverName = "gpu.gpuinit.io"

// NodeName is the node Serve's helper publishes for.
const NodeName = "node-a"

// Serve starts the helper's servers for plugin, with their sockets in a
// temporary folder and client as the Kubernetes client (a fake clientset
// where nil); the helper stops at the test's end. It returns the helper and
// the DRA service's socket.
func Serve(t testing.TB, plugin kubeletplugin.DRAPlugin, client kubernetes.Interface) (*kubeletplugin.Helper, string) {
	t.Helper()
	if client == nil {
		client = fake.NewClientset()
	}
	dir := t.TempDir()
	h, err := kubeletplugin.Start(context.Background(), plugin,
		kubeletplugin.DriverName(DriverName), kubeletplugin.NodeName(NodeName),
		kubeletplugin.KubeClient(client), kubeletplugin.PluginDataDirectoryPath(dir),
		kubeletplugin.RegistrarDirectoryPath(dir))
	require.NoError(t, err)
	t.Cleanup(h.Stop)
	return h, filepath.Join(dir, "dra.sock")
}

// Stream is one NodeWatchResources stream, read as the kubelet reads it.
type Stream struct {
	cancel    context.CancelFunc
	responses chan *drahealthv1.NodeWatchResourcesResponse
	done      chan struct{} // closed when the stream has ended; err is set then
	err       error
	mu        sync.Mutex // protects health
	health    map[string]drahealthv1.HealthStatus
}

// Watch opens a stream on the DRA socket with the kubelet's client; it is
// cancelled at the test's end.
func Watch(t testing.TB, socket string) *Stream {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := drahealthv1.NewDRAResourceHealthClient(conn).NodeWatchResources(ctx, &drahealthv1.NodeWatchResourcesRequest{})
	require.NoError(t, err)
	s := &Stream{cancel: cancel, responses: make(chan *drahealthv1.NodeWatchResourcesResponse, 1024),
		done: make(chan struct{}), health: map[string]drahealthv1.HealthStatus{}}
	go func() {
		defer close(s.done)
		for {
			r, err := stream.Recv()
			if err != nil {
				s.err = err
				return
			}
			s.responses <- r
		}
	}()
	t.Cleanup(func() {
		s.Close()
		_ = conn.Close()
	})
	return s
}

// Close cancels the stream and waits for its reader to end.
func (s *Stream) Close() {
	s.cancel()
	<-s.done
}

// Next is the stream's next response; it fails the test when none comes
// within limit, or the stream ends.
func (s *Stream) Next(t testing.TB, limit time.Duration) *drahealthv1.NodeWatchResourcesResponse {
	t.Helper()
	select {
	case r := <-s.responses:
		return s.take(r)
	case <-s.done:
		select {
		case r := <-s.responses: // read before the stream ended
			return s.take(r)
		default:
		}
		t.Fatalf("the stream ended: %v", s.err)
	case <-time.After(limit):
		t.Fatalf("no response within %v", limit)
	}
	return nil
}

// take applies r to the kubelet's cache and returns it.
func (s *Stream) take(r *drahealthv1.NodeWatchResourcesResponse) *drahealthv1.NodeWatchResourcesResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range r.Devices {
		s.health[d.Device.PoolName+"/"+d.Device.DeviceName] = d.Health
	}
	return r
}

// Until reads responses until cond holds for one, within limit, and returns
// the responses read, the last one cond's.
func (s *Stream) Until(t testing.TB, limit time.Duration, cond func(*drahealthv1.NodeWatchResourcesResponse) bool) []*drahealthv1.NodeWatchResourcesResponse {
	t.Helper()
	deadline := time.Now().Add(limit)
	var read []*drahealthv1.NodeWatchResourcesResponse
	for {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("none of the %d responses read in %v was the one awaited", len(read), limit)
		}
		r := s.Next(t, left)
		read = append(read, r)
		if cond(r) {
			return read
		}
	}
}

// Health is what the kubelet's cache holds for "pool/device": the last
// health a response read by Next gave it; ok is false for none.
func (s *Stream) Health(id string) (h drahealthv1.HealthStatus, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok = s.health[id]
	return h, ok
}

// Ended waits, for limit at most, for the stream to end, and returns its
// error; it fails the test if the stream goes on, or sends on.
func (s *Stream) Ended(t testing.TB, limit time.Duration) error {
	t.Helper()
	select {
	case <-s.done:
		return s.err
	case <-time.After(limit):
		t.Fatalf("the stream did not end within %v", limit)
	}
	return nil
}

// Of is the health of device "pool/name" in r, and whether r has it.
func Of(r *drahealthv1.NodeWatchResourcesResponse, id string) (drahealthv1.HealthStatus, bool) {
	for _, d := range r.Devices {
		if d.Device.PoolName+"/"+d.Device.DeviceName == id {
			return d.Health, true
		}
	}
	return 0, false
}
