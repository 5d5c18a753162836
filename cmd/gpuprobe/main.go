// Command gpuprobe tells an operator, in seconds, whether GPU bring-up works on
// this machine and whether the lazy-initialization paths that hung PyTorch are
// safe here. It prints the backend, driver and devices, runs each re-entrant
// scenario in a child process under a timeout (a hang becomes a verdict with the
// child's goroutine stacks), and checks the device RNG against rng/philox.
//
//	go run ./cmd/gpuprobe                       # default backend: cuda or hip if compiled in, else sim
//	go run -tags cuda ./cmd/gpuprobe -json      # CUDA, machine-readable
//	go run ./cmd/gpuprobe -discipline legacy -timeout 3s   # reproduce PyTorch's pre-fix hang
//
// Exit status: 0 all ok; 1 a scenario hung or failed, or the RNG check failed;
// 2 bad usage; 3 backend unavailable or no device.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/gpuinit/gpuinit/device"
	_ "github.com/gpuinit/gpuinit/device/backends"
)

// Exit statuses.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitUnavailable = 3
)

type config struct {
	backend    string
	timeout    time.Duration
	json       bool
	scenario   string
	discipline string
}

func main() {
	if name := os.Getenv(envChildScenario); name != "" {
		runChild(name)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpuprobe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.StringVar(&cfg.backend, "backend", "auto", "backend: auto, cuda, hip or sim (auto picks cuda, then hip, else sim)")
	fs.DurationVar(&cfg.timeout, "timeout", 60*time.Second, "time limit for initialization and for each scenario")
	fs.BoolVar(&cfg.json, "json", false, "print the report as JSON (schema gpuprobe/v1, see README)")
	fs.StringVar(&cfg.scenario, "scenario", "all", "scenarios to run: initialized, queued or all")
	fs.StringVar(&cfg.discipline, "discipline", "fixed", "initialization discipline: fixed (gpuinit's lazy) or legacy (PyTorch's pre-fix lock, hangs on purpose)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `gpuprobe: check GPU bring-up and the re-entrant lazy-init paths that hung PyTorch.

Usage: gpuprobe [flags]

Examples:
  gpuprobe                                  probe the default backend
  gpuprobe -json                            the same, as JSON on stdout
  gpuprobe -backend sim -scenario queued    only the queued-callback scenarios, simulated GPU
  gpuprobe -discipline legacy -timeout 3s   show the pre-fix hang and where it is stuck
  GPUINIT_SIM_FAIL=no-device gpuprobe -backend sim    see how a missing GPU is reported

Flags:
`)
		fs.PrintDefaults()
		fmt.Fprint(stderr, `
Exit status: 0 all ok; 1 a scenario hung or failed, or the RNG check failed;
2 bad usage; 3 backend unavailable or no device.
`)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gpuprobe: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	if cfg.discipline != "fixed" && cfg.discipline != "legacy" {
		fmt.Fprintf(stderr, "gpuprobe: unknown -discipline %q: want fixed or legacy\n", cfg.discipline)
		return exitUsage
	}
	if !slices.Contains([]string{"auto", "cuda", "hip", "sim"}, cfg.backend) {
		fmt.Fprintf(stderr, "gpuprobe: unknown -backend %q: want auto, cuda, hip or sim\n", cfg.backend)
		return exitUsage
	}
	if cfg.timeout <= 0 {
		fmt.Fprintln(stderr, "gpuprobe: -timeout must be positive")
		return exitUsage
	}
	selected, err := selectScenarios(cfg.scenario)
	if err != nil {
		fmt.Fprintln(stderr, "gpuprobe:", err)
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep := probe(ctx, cfg, selected, stderr)
	if cfg.json {
		writeJSON(stdout, rep)
	} else {
		writeText(stdout, rep)
	}
	return rep.ExitCode
}

// resolveBackend turns "auto" into a compiled-in GPU backend, or sim with a
// one-line notice when there is none.
func resolveBackend(name string, progress io.Writer) string {
	if name != "auto" {
		return name
	}
	for _, gpu := range []string{"cuda", "hip"} {
		if slices.Contains(device.Backends(), gpu) {
			return gpu
		}
	}
	fmt.Fprintln(progress, "gpuprobe: no GPU backend compiled in (build with -tags cuda or -tags hip); using sim")
	return "sim"
}
