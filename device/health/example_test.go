package health_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/device/sim"
)

// A server mounts the probes on its mux, serves them, and shuts down on
// SIGTERM, which is how Kubernetes stops a pod. The first readiness probe
// starts the initialization in the background and answers 503 while it runs;
// liveness answers 200 throughout.
func Example_server() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()

	rt := device.New(sim.New()) // a server: device.Open("") for its GPUs
	defer rt.Shutdown(context.Background())
	h := health.New(rt, health.WithLogger(slog.New(slog.DiscardHandler))) // a server: its own logger
	defer h.Close()

	mux := http.NewServeMux()
	h.Mount(mux)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a server: ":8000"
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	get := func(path string) {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Printf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	get(health.LivePath)
	get(health.ReadyPath) // starts the initialization
	// The example waits for it; an orchestrator probes again until 200.
	if err := rt.Init(ctx); err != nil {
		fmt.Println(err)
		return
	}
	get(health.ReadyPath)
	get(health.LivePath)

	// A server blocks here until SIGTERM; the example stops the context
	// itself, in the signal's place, so that it ends.
	stop()
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Println(err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		fmt.Println(err)
	}
	fmt.Println("shut down")
	// Output:
	// GET /v2/health/live: 200 ok
	// GET /v2/health/ready: 503 initializing: a probe started it
	// GET /v2/health/ready: 200 ready
	// GET /v2/health/live: 200 ok
	// shut down
}

// Readiness and Liveness are the probes' answers as values, for a server that
// serves them some other way (gRPC's health service, a metrics gauge).
// WithoutAutoInit leaves the initialization to the server's first use.
func ExampleHealth_Readiness() {
	rt := device.New(sim.New())
	defer rt.Shutdown(context.Background())
	h := health.New(rt, health.WithoutAutoInit(), health.WithLogger(slog.New(slog.DiscardHandler)))
	defer h.Close()

	show := func(ok bool, reason string) { fmt.Printf("%t %q\n", ok, reason) }
	show(h.Readiness())
	show(h.Liveness())
	if _, err := rt.DeviceCount(context.Background()); err != nil { // the server's first use
		fmt.Println(err)
		return
	}
	show(h.Readiness())
	// Output:
	// false "not initialized: nothing has used the GPU yet, and probes do not start it"
	// true ""
	// true ""
}

// With WithCPUFallback a server without a GPU is ready, degraded; the status
// says why, with the failure's class. Liveness stays 200: a restart would not
// bring a GPU.
func ExampleWithCPUFallback() {
	rt := device.New(sim.New(sim.WithFailure(sim.NoDevice)))
	defer rt.Shutdown(context.Background())
	h := health.New(rt, health.WithCPUFallback(), health.WithLogger(slog.New(slog.DiscardHandler)))
	defer h.Close()
	if err := rt.Init(context.Background()); !(device.ClassOf(err) != device.ClassNone) {
		fmt.Println(err)
		return
	}

	ready, why := h.Readiness()
	why, _, _ = strings.Cut(why, " (")
	fmt.Println(ready, why)
	s := h.Snapshot()
	fmt.Println(s.State, s.Class, s.Degraded, s.Live, s.Failure.Name)
	// Output:
	// true degraded: serving without a GPU: initialization failed
	// failed no-gpu true true CUDA_ERROR_NO_DEVICE
}

// Snapshot is the status the status handler serves as JSON: devices and
// versions are read once, when the initialization finishes.
func ExampleHealth_Snapshot() {
	rt := device.New(sim.New())
	defer rt.Shutdown(context.Background())
	h := health.New(rt, health.WithLogger(slog.New(slog.DiscardHandler)))
	defer h.Close()
	if err := rt.Init(context.Background()); err != nil {
		fmt.Println(err)
		return
	}

	s := h.Snapshot()
	fmt.Println(s.Schema, s.State, s.Ready, s.Live, s.Backend, s.DriverVersion)
	for _, d := range s.Devices {
		fmt.Println(d.Ordinal, d.Name, d.ComputeCapability, d.TotalMemory>>30)
	}
	// Output:
	// gpuinit-health/v1 ready true true sim 12020
	// 0 gpuinit simulated H100 9.0 80
	// 1 gpuinit simulated H100 9.0 80
}
