package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gpuinit/gpuinit/device"
	_ "github.com/gpuinit/gpuinit/device/backends"
	"github.com/gpuinit/gpuinit/device/health"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	addr := fs.String("addr", "localhost:8080", "address to listen on")
	backend := fs.String("backend", "", "backend: cuda, hip, sim or auto (default: $GPUINIT_BACKEND, else auto)")
	seed := fs.Uint64("seed", 42, "seed queued for every device before initialization")
	deadline := fs.Duration("init-deadline", health.DefaultInitDeadline, "how long the in-process initialization may run before liveness fails")
	logLevel := fs.String("log-level", "info", "the lowest level logged: debug, info, warn or error")
	callDeadline := fs.Duration("call-deadline", device.DefaultCallDeadline, "how long a driver call after init may run before its device is lost as hung; 0 never")
	restartOnLoss := fs.Bool("restart-on-device-loss", false, "fail liveness once a device is lost, so that the orchestrator restarts the server")
	canary := fs.Duration("canary", 0, "how often readiness proves each device still works with a 4-byte round trip; 0 never")
	grace := fs.Duration("shutdown-grace", 10*time.Second, "how long requests may finish after SIGTERM before they are cut off")
	preflight := fs.Duration("preflight", (30 * time.Second), "deadline of the preflight child that runs the driver's init first; 0 turns it off ($GPUINIT_PREFLIGHT overrides)")
	backoff := fs.Duration("preflight-backoff", time.Second, "the wait before a preflight child that found the GPU not ready yet is retried; it doubles, up to 30s")
	prestart := fs.Bool("preflight-prestart", true, "start the first preflight child as the server starts, so that the first initialization does not wait for its process start")
	var usage bytes.Buffer // -h's answer goes to stdout, a flag's error to stderr
	fs.SetOutput(&usage)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = os.Stdout.Write(usage.Bytes())
			return nil
		}
		_, _ = os.Stderr.Write(usage.Bytes())
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("-log-level=%q: want debug, info, warn or error", *logLevel)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	rt, err := device.Open(*backend, device.WithLogger(logger)) // the watchdog warns in the server's format
	if err != nil {
		return err
	}
	if *preflight > 0 {
		if err := rt.UsePreflight(device.Preflight{Deadline: *preflight, Backoff: *backoff, Prestart: *prestart}); err != nil {
			return err
		}
	}
	rt.SetCallDeadline(*callDeadline)
	opts := []health.Option{health.WithInitDeadline(*deadline)}
	if *canary > 0 {
		opts = append(opts, health.WithCanary(*canary))
	}
	if *restartOnLoss {
		opts = append(opts, health.WithRestartOnDeviceLoss())
	}
	srv, err := newServer(rt, *seed, logger, opts...)
	if err != nil {
		return err
	}
	defer func() { // on an early return; the signal's path shuts down below, within the grace
		ctx, cancel := context.WithTimeout(context.Background(), *grace)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	logger.Info("listening", "addr", ln.Addr().String(), "backend", rt.Name())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// Requests run under ctx, so that the signal also ends any that wait for
	// an initialization that hangs: Shutdown alone would wait for them.
	httpSrv := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	served := make(chan error, 1)
	go func() { served <- httpSrv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	// The runtime shuts down while the requests drain, since the driver's
	// health watch may be in a wait of up to a second; neither waits past
	// the grace for a driver call that hangs.
	runtimeDown := make(chan error, 1)
	go func() { runtimeDown <- srv.Shutdown(shutdownCtx) }()
	defer func() {
		if err := <-runtimeDown; err != nil {
			logger.Warn("the GPU runtime's shutdown", "err", err)
		}
	}()
	if err := httpSrv.Shutdown(shutdownCtx); err != nil {
		logger.Warn("requests still running at the shutdown deadline were cut off", "err", err)
		_ = httpSrv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
