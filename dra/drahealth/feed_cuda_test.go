//go:build linux && cgo

package drahealth_test

// The tests here are feed_grpc_test.go's over gpuinit's cuda backend and the
// fake libcuda and NVML that the root module's tests build from C
// (internal/fakedriver/csrc): an Xid is a line in the fake NVML's events
// file, which its nvmlEventSetWait_v2 reads, and "hang-call <name>" makes
// the next call of that name never return. A driver library stays loaded
// once loaded, so each test runs its Runtime in a child process: this test
// binary again, with -test.run naming a TestChildCUDA function and
// cudaChild set.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/cuda"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/dra/drahealth"
	"github.com/gpuinit/gpuinit/dra/internal/kubelettest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
)

// cudaChild tells this test binary that it runs as a child of
// TestKubeletOverTheFakeCUDA.
const cudaChild = "GPUINIT_DRA_CUDA_TEST_CHILD"

// fakeEvents is the fake NVML's events file, which a child appends to.
const fakeEvents = "GPUINIT_FAKE_NVML_EVENTS"

// fakeSources is where the root module keeps the fakes' C sources, from
// this package's folder.
const fakeSources = "../../internal/fakedriver/csrc"

// TestKubeletOverTheFakeCUDA runs each child over its own copy of the fake
// libcuda and NVML, with its own events file.
func TestKubeletOverTheFakeCUDA(t *testing.T) {
	libs := t.TempDir()
	env := []string{
		cuda.EnvLibrary + "=" + buildFake(t, libs, "fakecuda.c", "libcuda.so.1"),
		cuda.EnvNVMLLibrary + "=" + buildFake(t, libs, "fakenvml.c", "libnvidia-ml.so.1"),
	}
	for _, c := range []struct {
		name, child string
		env         []string
	}{
		{"an Xid 79 on device 1 reaches the kubelet as Unhealthy for it alone, within 100 ms", "TestChildCUDAXid79", nil},
		// The fake's wait polls its file 10 times in its second, not 500:
		// it counts polls, not time, so that fewer of them overrun less on a
		// busy machine, as NVML's timed wait does not.
		{"a hung NVML event wait reaches the kubelet as Unknown naming the call, never Healthy after", "TestChildCUDAHungWait",
			[]string{"GPUINIT_FAKE_NVML_POLL_MS=100"}},
		{"shutdown turns the devices Unknown, the lost one Unhealthy, and stopping ends the stream", "TestChildCUDAShutdown", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each child has its own events file, and mostly waits in NVML
			events := filepath.Join(t.TempDir(), "events")
			require.NoError(t, os.WriteFile(events, nil, 0o644))
			runCUDAChild(t, c.child, append(append(env, fakeEvents+"="+events), c.env...)...)
		})
	}
}

// buildFake compiles the fake source (fakeSources/src) into dir as soname
// with the system's C compiler, and returns its path; it skips t if there
// is none.
func buildFake(t *testing.T, dir, src, soname string) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) to build the fake %s", cc, soname)
	}
	out := filepath.Join(dir, soname)
	cmd := exec.Command(cc, "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-Wl,-soname,"+soname, "-o", out,
		filepath.Join(fakeSources, src), "-lpthread", "-ldl")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the fake %s from %s: %v\n%s", soname, src, err, msg)
	}
	return out
}

// runCUDAChild runs test in a child with env, for two minutes at most, and
// fails t unless the child passed.
func runCUDAChild(t *testing.T, test string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+test+"$", "-test.v", "-test.count=1")
	cmd.Env = append(append(os.Environ(), env...), cudaChild+"=1")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s did not end within 2 minutes:\n%s", test, out)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: "+test+" (") {
		t.Fatalf("%s: %v:\n%s", test, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, ".go:") && !strings.Contains(line, "Error") {
			t.Log(strings.TrimSpace(line)) // the child's own t.Logf lines, its figures
		}
	}
}

// cudaFeed skips t unless it runs as a child; it opens a Runtime over the
// cuda backend, waits until its health watch watches both devices and
// finds them healthy, and serves its Feed; uuids are its devices'.
func cudaFeed(t *testing.T, opts drahealth.Options) (f served, uuids [2]string) {
	t.Helper()
	if os.Getenv(cudaChild) == "" {
		t.Skip("run by TestKubeletOverTheFakeCUDA in a child process")
	}
	rt, err := device.Open("cuda")
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // a hung watch is abandoned
		defer cancel()
		_ = rt.Shutdown(ctx)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	devices, err := rt.Devices(ctx)
	require.NoError(t, err)
	require.Len(t, devices, 2)
	waitStats(t, rt, func(s device.Stats) bool {
		return len(s.Health) == 2 && s.Health[0].Watched && s.Health[1].Watched &&
			s.Health[0].Verdict == healthwatch.VerdictHealthy && s.Health[1].Verdict == healthwatch.VerdictHealthy
	})
	for i := range uuids {
		uuids[i] = devices[i].UUID
	}
	return serveFeed(t, rt, devices, opts), uuids
}

// inject appends line to the fake NVML's events file.
func inject(t *testing.T, line string) {
	t.Helper()
	file, err := os.OpenFile(os.Getenv(fakeEvents), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	defer file.Close()
	_, err = file.WriteString(line + "\n")
	require.NoError(t, err)
}

// TestChildCUDAXid79: an Xid 79 on device 1, as NVML's event wait reports
// it, reaches the kubelet's client as Unhealthy for that device within
// 100 ms, with the Xid's name; device 0 stays Healthy in every report, the
// re-send after it too.
func TestChildCUDAXid79(t *testing.T) {
	const resend = 300 * time.Millisecond // longer than the bound: only the change can meet it
	f, uuids := cudaFeed(t, drahealth.Options{Timeout: time.Second, Resend: resend})
	latency := kubeletSeesXid79(t, f, func() { inject(t, "xid "+uuids[1]+" 79") })
	t.Logf("Xid 79 in NVML's events to the kubelet's client: %v", latency)
}

// TestChildCUDAHungWait: NVML's event wait that never returns (the fake's
// "hang-call nvmlEventSetWait_v2": the next wait hangs) reaches the
// kubelet's client as Unknown for both devices, the wait being about every
// device, naming the call: not before the Runtime's call deadline, and at
// most one wait (a second) after it. The re-sends after say Unknown, never
// Healthy. Before the hang, an idle watch's waits stay within the deadline:
// every re-send for longer than a wait says Healthy.
func TestChildCUDAHungWait(t *testing.T) {
	// The Runtime's call deadline, and so its watch's. It is three times
	// the cuda watch's nvmlEventSetWait_v2 timeout (1 s): under that
	// timeout, each idle wait outlives the deadline and the devices flap to
	// Unknown; near it, a wait that a busy machine delays does.
	const deadline = 3 * time.Second
	f, _ := cudaFeed(t, drahealth.Options{Timeout: 5 * time.Second, Resend: 200 * time.Millisecond})
	f.rt.SetCallDeadline(deadline)
	s := kubelettest.Watch(t, f.socket)
	first := s.Next(t, 5*time.Second)
	for _, id := range f.ids {
		require.True(t, is(id, drahealthv1.HealthStatus_HEALTHY)(first), id)
	}
	for idle := time.Now(); time.Since(idle) < 1500*time.Millisecond; { // longer than a wait
		for _, d := range s.Next(t, 5*time.Second).Devices {
			require.Equal(t, drahealthv1.HealthStatus_HEALTHY, d.Health, "%s while idle: %s", d.Device.DeviceName, d.Message)
		}
	}

	hung := time.Now()
	inject(t, "hang-call nvmlEventSetWait_v2")
	read := s.Until(t, 10*time.Second, is(f.ids[0], drahealthv1.HealthStatus_UNKNOWN))
	took := time.Since(hung)
	t.Logf("a hung nvmlEventSetWait_v2 to Unknown on the kubelet's client: %v (deadline %v)", took, deadline)
	assert.GreaterOrEqual(t, took, deadline, "not before the monitor's deadline")
	assert.Less(t, took, deadline+2*time.Second, "within the wait in progress, the deadline and a margin")
	last := read[len(read)-1]
	require.Len(t, last.Devices, 2, "a hung wait is about every device")
	for _, d := range last.Devices {
		assert.Equal(t, drahealthv1.HealthStatus_UNKNOWN, d.Health, d.Device.DeviceName)
		assert.Contains(t, d.Message, "nvmlEventSetWait_v2", d.Device.DeviceName)
	}
	for range 3 { // the re-sends after: still Unknown
		r := s.Until(t, 5*time.Second, func(r *drahealthv1.NodeWatchResourcesResponse) bool { return len(r.Devices) == 2 })
		read = append(read, r...)
	}
	for _, r := range read[len(read)-3:] {
		for _, d := range r.Devices {
			assert.Equal(t, drahealthv1.HealthStatus_UNKNOWN, d.Health, "%s after the hang", d.Device.DeviceName)
		}
	}
}

// TestChildCUDAShutdown: shutting the Runtime down turns the device that
// is not lost Unknown, at the next re-send at the latest, and the one an
// Xid 79 lost stays Unhealthy; stopping the helper then ends the kubelet's
// stream and returns the Feed's WatchHealthStatus.
func TestChildCUDAShutdown(t *testing.T) {
	f, uuids := cudaFeed(t, drahealth.Options{Timeout: time.Second, Resend: 100 * time.Millisecond})
	s := kubelettest.Watch(t, f.socket)
	s.Next(t, 5*time.Second)
	inject(t, "xid "+uuids[1]+" 79")
	s.Until(t, 5*time.Second, is(f.ids[1], drahealthv1.HealthStatus_UNHEALTHY))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, f.rt.Shutdown(ctx))
	r := s.Until(t, 5*time.Second, is(f.ids[0], drahealthv1.HealthStatus_UNKNOWN))
	staysLost(t, s, f.ids[1], r)

	f.helper.Stop()
	assert.Error(t, s.Ended(t, 5*time.Second), "the stream ends with the server")
	f.plugin.awaitReturn(t)
}
