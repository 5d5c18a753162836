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
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
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

// BenchmarkStatus compares the status of a host whose devices carry every
// signal of the driver's own verdicts with one whose devices carry none: the
// snapshot (what the signals cost to read) and the handler (which encodes a
// body twice the size); run both side by side:
//
//	go test -run '^$' -bench Status -benchmem ./device/health
func BenchmarkStatus(b *testing.B) {
	for _, signals := range []bool{false, true} {
		b.Run(map[bool]string{false: "no-signals", true: "every-signal"}[signals], func(b *testing.B) {
			s := sim.New()
			rt := device.New(s)
			defer rt.Shutdown(context.Background())
			if err := rt.Init(context.Background()); err != nil {
				b.Fatal(err)
			}
			for st := rt.Stats(); len(st.Health) < 2 || !st.Health[1].Watched; st = rt.Stats() {
				<-st.Changed()
			}
			if signals {
				injectEverySignal(s)
			}
			h := health.New(rt, health.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
			defer h.Close()
			b.Run("snapshot", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					h.Snapshot()
				}
			})
			b.Run("handler", func(b *testing.B) {
				hh := h.Status()
				req := httptest.NewRequest(http.MethodGet, "/", nil)
				rec := httptest.NewRecorder()
				b.ReportAllocs()
				for b.Loop() {
					rec.Body.Reset()
					hh.ServeHTTP(rec, req)
				}
			})
		})
	}
}

// injectEverySignal has each of s's devices report each verdict signal.
func injectEverySignal(s *sim.Backend) {
	u := uint64(12)
	yes := true
	for o := range 2 {
		for _, ev := range []healthwatch.Event{
			{Kind: healthwatch.KindCounters, Counters: &healthwatch.Counters{PCIeReplays: &u, RowRemapsPending: &yes, ECCCorrected: &u}},
			{Kind: healthwatch.KindRecovery, Action: healthwatch.Degrade, Recovery: healthwatch.RecoveryDrain, Message: "drain peer-to-peer"},
			{Kind: healthwatch.KindRemap, Action: healthwatch.Degrade, Message: "a row remap is pending", Hint: "reset the GPU"},
			{Kind: healthwatch.KindReplay, Code: 12},
			{Kind: healthwatch.KindFabric, Action: healthwatch.Degrade, Fabric: &healthwatch.FabricState{State: 3, Summary: 3, Words: "limited capacity"}, Message: "limited capacity"},
			{Kind: healthwatch.KindXid, Action: healthwatch.Count, Code: 13},
			{Kind: healthwatch.KindVMFault, Action: healthwatch.Count},
		} {
			ev.Ordinal = o
			s.InjectHealthEvent(ev)
		}
	}
}
