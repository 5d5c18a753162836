package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/gpuinit/gpuinit/rng"
)

// maxDraw bounds one request's count.
const maxDraw = 1 << 16

// server is the example's GPU side: the runtime, its generators and health.
type server struct {
	rt     *device.Runtime
	gens   *rng.Generators
	health *health.Health
	log    *slog.Logger

	// drawing serializes each device's draws, so that each reports the
	// state it drew from; a draw waits for its turn no longer than its
	// request (a channel, not a mutex, since a draw that hangs in the
	// driver holds it for ever), and a device's hang holds up no other's.
	drawing [maxDevices]chan struct{}
}

// maxDevices bounds the devices the example draws on.
const maxDevices = 64

// newServer queues the seed for every device (nothing initializes yet) and
// sets up health over rt, saying that the server serves on the CPU where the
// host has no GPU. A GPU that is there but broken, or not ready yet, is never
// served around: readiness stays 503 with the reason, and draws fail.
func newServer(rt *device.Runtime, seed uint64, logger *slog.Logger, opts ...health.Option) (*server, error) {
	s := &server{rt: rt, gens: rng.New(rt), log: logger}
	for i := range s.drawing {
		s.drawing[i] = make(chan struct{}, 1)
	}
	if err := s.gens.ManualSeedAll(context.Background(), seed); err != nil {
		return nil, err
	}
	opts = append([]health.Option{health.WithLogger(logger), health.WithCPUFallback()}, opts...)
	s.health = health.New(rt, opts...)
	return s, nil
}

// Shutdown shuts the runtime down, and with it health's background
// initialization and the generators, which registered with it: one call,
// bounded by ctx. Nothing waits past ctx for a driver call that hangs.
func (s *server) Shutdown(ctx context.Context) error { return s.rt.Shutdown(ctx) }

// Handler serves the health paths and /v1/draw.
func (s *server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.health.Mount(mux)
	mux.HandleFunc("GET /v1/draw", s.draw)
	return mux
}

// drawResult is /v1/draw's answer: the values, and the generator state they
// were drawn from, so that anyone can check them against rng/philox.
type drawResult struct {
	Device int      `json:"device"`
	Seed   uint64   `json:"seed"`
	Offset uint64   `json:"offset"`
	Source string   `json:"source"` // device, or cpu where the backend has no generators
	Values []uint32 `json:"values"`
}

// draw serves GET /v1/draw?device=0&n=16. It initializes the runtime if
// needed, waiting no longer than the request. HEAD checks the parameters and
// draws nothing: it has no side effects, as HTTP asks.
func (s *server) draw(w http.ResponseWriter, r *http.Request) {
	ordinal, n, err := drawParams(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		return
	}
	res, err := s.drawFrom(r.Context(), ordinal, n)
	switch {
	case errors.Is(err, device.ErrInvalidDevice):
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case err != nil:
		// Only the driver's own errors from a call on the device say
		// something about it: a cancelled request or a failed initialization
		// does not, and the runtime refuses reports of ordinals it does not
		// have. health logs a new loss, once, when it next observes the
		// runtime: have it observe now rather than at the next probe.
		var de *device.DriverError
		if errors.As(err, &de) && (s.rt.Stats().State == lazy.Ready) {
			if errors.Is(s.rt.ReportError(ordinal, de), device.ErrDeviceLost) {
				s.health.Liveness()
			}
		}
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}

func drawParams(r *http.Request) (ordinal, n int, err error) {
	ordinal, n = 0, 16
	if v := r.URL.Query().Get("device"); v != "" {
		if ordinal, err = strconv.Atoi(v); err != nil {
			return 0, 0, fmt.Errorf("device=%q: want an ordinal", v)
		}
	}
	if v := r.URL.Query().Get("n"); v != "" {
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > maxDraw {
			return 0, 0, fmt.Errorf("n=%q: want 1..%d", v, maxDraw)
		}
	}
	return ordinal, n, nil
}

func (s *server) drawFrom(ctx context.Context, ordinal, n int) (drawResult, error) {
	// Wait for the GPU before taking the lock, so that a draw waits for a
	// slow init no longer than its own request, not behind another's.
	// Stats copies the runtime's state: read it only for a line that is logged.
	if s.log.Enabled(ctx, slog.LevelDebug) && s.rt.Stats().State != lazy.Ready {
		s.log.Debug("draw waits for the GPU's initialization", "device", ordinal)
	}
	err := s.rt.Init(ctx)
	onCPU := device.FallBackToCPU(err) // no GPU here: the stream the seed chose, on the CPU
	switch {
	case onCPU && ordinal != 0:
		return drawResult{}, fmt.Errorf("ordinal %d: without a GPU the server draws device 0's stream on the CPU only: %w", ordinal, device.ErrInvalidDevice)
	case onCPU:
	case err != nil:
		return drawResult{}, err
	default:
		// A lost device (hung, say) fails at once, not after the request's
		// wait for a turn that may never come.
		if err := s.rt.CheckDevice(ordinal); err != nil {
			return drawResult{}, err
		}
	}
	if ordinal >= maxDevices {
		return drawResult{}, fmt.Errorf("ordinal %d: the example draws on devices 0 to %d only: %w", ordinal, maxDevices-1, device.ErrInvalidDevice)
	}
	select {
	case s.drawing[ordinal] <- struct{}{}:
		defer func() { <-s.drawing[ordinal] }()
	case <-ctx.Done():
		s.log.Debug("draw gave up waiting for the one before it", "device", ordinal, "err", context.Cause(ctx))
		return drawResult{}, fmt.Errorf("waiting for device %d's draw before this one: %w", ordinal, context.Cause(ctx))
	}
	st, err := s.gens.State(ctx, ordinal)
	if err != nil {
		return drawResult{}, err
	}
	res := drawResult{Device: ordinal, Seed: st.Seed, Offset: st.Offset, Source: "device", Values: make([]uint32, n)}
	if !onCPU {
		err = s.gens.Generate(ctx, ordinal, res.Values)
		if !errors.Is(err, device.ErrNotSupported) {
			return res, err
		}
	}
	// No GPU, or no device generators: the same stream on the CPU,
	// advancing the state as a device draw would.
	res.Source = "cpu"
	return res, s.gens.GenerateOnHost(ctx, ordinal, res.Values)
}
