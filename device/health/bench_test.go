package health_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/device/sim"
)

// go test -run '^$' -bench . -benchmem ./device/health
//
// One recorder is reused, so that what is counted is the handler's own work.
func benchmarkHandler(b *testing.B, handler func(*health.Health) http.Handler) {
	rt := device.New(sim.New())
	if err := rt.Init(context.Background()); err != nil {
		b.Fatal(err)
	}
	h := health.New(rt, health.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer h.Close()
	hh := handler(h)
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	rec := httptest.NewRecorder()
	hh.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	b.ReportAllocs()
	for b.Loop() {
		rec.Body.Reset()
		hh.ServeHTTP(rec, req)
	}
}

func BenchmarkReady(b *testing.B) { benchmarkHandler(b, (*health.Health).Ready) }
func BenchmarkLive(b *testing.B)  { benchmarkHandler(b, (*health.Health).Live) }

// The probes while a preflight child runs or its retry waits: the phase the
// Runtime is in for as long as a driver is not ready yet.
func benchmarkWaiting(b *testing.B, check func(*health.Health) func() (bool, string)) {
	rt := waitingRuntime(b)
	h := health.New(rt, health.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer h.Close()
	h.Readiness() // starts init
	for rt.Stats().BringUp.Attempts == 0 {
		runtime.Gosched()
	}
	c := check(h)
	b.ReportAllocs()
	for b.Loop() {
		c()
	}
}

func BenchmarkReadinessWhileAPreflightWaits(b *testing.B) {
	benchmarkWaiting(b, func(h *health.Health) func() (bool, string) { return h.Readiness })
}

func BenchmarkLivenessWhileAPreflightWaits(b *testing.B) {
	benchmarkWaiting(b, func(h *health.Health) func() (bool, string) { return h.Liveness })
}
