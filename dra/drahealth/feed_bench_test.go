package drahealth_test

import (
	"context"
	goruntime "runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/dra/drahealth"
	"github.com/gpuinit/gpuinit/dra/internal/kubelettest"
	"github.com/stretchr/testify/require"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
)

// The feed's cost with nothing happening is its re-sends: 6 a minute at the
// default 10 s. Each benchmark op is one re-send of 8 simulated devices
// (re-sent each millisecond, to count many); the per-device-per-minute
// figures are an op's CPU time (the process's, from getrusage: every
// goroutine, the GC too) and allocations, divided by 8, times 6.
// Run: go test -run '^$' -bench . -benchtime 200x ./drahealth

const benchDevices = 8

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// perDeviceMinute reports the CPU and allocations of an op as a device's
// share of a minute of default re-sends.
func perDeviceMinute(b *testing.B, cpu time.Duration, allocs uint64) {
	perMinute := float64(time.Minute / (drahealth.DefaultTimeout / 3))
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/benchDevices*perMinute/1e3, "CPU-µs/device/min")
	b.ReportMetric(float64(allocs)/float64(b.N)/benchDevices*perMinute, "allocs/device/min")
}

// BenchmarkResendFeed: a re-send from the Runtime into the reports
// channel, the plugin's side alone.
func BenchmarkResendFeed(b *testing.B) {
	_, rt, devices := simRuntime(b, benchDevices)
	f, err := drahealth.NewFeed(drahealth.FromRuntime(rt), devices, drahealth.Options{Pool: "node-a",
		Timeout: time.Second, Resend: time.Millisecond})
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	reports := make(chan kubeletplugin.DeviceHealthReport)
	done := make(chan error)
	go func() { done <- f.WatchHealthStatus(ctx, reports) }()
	<-reports
	measure(b, func() { <-reports })
	cancel()
	require.NoError(b, <-done)
}

// BenchmarkResendOverGRPC: a re-send through the helper's gRPC server to
// the kubelet's client, both in this process.
func BenchmarkResendOverGRPC(b *testing.B) {
	s := simFeed(b, drahealth.Options{Timeout: time.Second, Resend: time.Millisecond})
	stream := kubelettest.Watch(b, s.socket)
	stream.Next(b, 5*time.Second)
	measure(b, func() { stream.Next(b, 5*time.Second) })
}

// measure runs op b.N times and reports its CPU and allocations.
func measure(b *testing.B, op func()) {
	var before, after runtimeMemStats
	before.read()
	cpu := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		op()
	}
	b.StopTimer()
	cpu = cpuTime(b) - cpu
	after.read()
	perDeviceMinute(b, cpu, after.Mallocs-before.Mallocs)
}

// BenchmarkXid79ToKubelet: from an Xid 79 injected into the simulated
// driver to the Unhealthy report on the kubelet's client; the setup of each
// op's Runtime, helper and stream is not timed.
func BenchmarkXid79ToKubelet(b *testing.B) {
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := simFeed(b, drahealth.Options{Timeout: time.Hour})
		stream := kubelettest.Watch(b, s.socket)
		stream.Next(b, 5*time.Second)
		b.StartTimer()
		start := time.Now()
		s.sim.InjectXid(1, 79)
		stream.Until(b, 5*time.Second, is(s.ids[1], drahealthv1.HealthStatus_UNHEALTHY))
		total += time.Since(start)
		b.StopTimer()
		stream.Close()
		s.helper.Stop()
		_ = s.rt.Shutdown(context.Background())
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs-to-client")
}

// runtimeMemStats is the process's allocation count.
type runtimeMemStats struct{ Mallocs uint64 }

func (m *runtimeMemStats) read() {
	var s goruntime.MemStats
	goruntime.ReadMemStats(&s)
	m.Mallocs = s.Mallocs
}
