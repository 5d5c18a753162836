// Command minimal is the smallest complete server over gpuinit, the one
// README.md shows: it opens the GPU runtime, queues a seed, serves the health
// probes, draws on the GPU or the CPU, and shuts down on SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/gpuinit/gpuinit/device"
	_ "github.com/gpuinit/gpuinit/device/backends" // cuda, hip and sim; serves the preflight child
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/rng"
)

func main() {
	addr := flag.String("addr", "localhost:8080", "where to listen")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	rt, err := device.Open("") // auto: the first GPU backend that works; touches no driver
	if err != nil {
		log.Fatal(err) // a bad GPUINIT_* setting: fix it, never serve around it
	}
	if err := rt.UsePreflight(device.Preflight{}); err != nil { // a child runs the driver's init first
		log.Fatal(err)
	}
	gens := rng.New(rt)
	if err := gens.ManualSeed(ctx, 0, 42); err != nil { // queued: no driver is loaded yet
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	health.New(rt, health.WithCPUFallback()).Mount(mux) // the first readiness probe starts the init
	mux.HandleFunc("GET /draw", func(w http.ResponseWriter, r *http.Request) {
		values := make([]uint32, 4)
		_, err := rt.DeviceCount(r.Context()) // waits for the init: the child, the driver, the seed
		switch {
		case device.FallBackToCPU(err): // no GPU here: err says why, and so does /gpuinit/status
			err = gens.GenerateOnHost(r.Context(), 0, values) // what device 0 would draw
		case err == nil:
			err = gens.Generate(r.Context(), 0, values)
		}
		if err != nil { // a GPU broken or not ready yet: never served around on the CPU
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, values)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("listening on %s", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }} // SIGTERM ends requests' waits
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}() // Shutdown ends it at once
	<-ctx.Done() // SIGTERM or SIGINT
	down, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The server drains its requests; the Runtime stops gens, the probes and the driver's watches.
	if err := errors.Join(srv.Shutdown(down), rt.Shutdown(down)); err != nil {
		log.Fatal(err)
	}
}
