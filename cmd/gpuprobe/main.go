package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
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
	exitSIGINT      = 128 + int(syscall.SIGINT)  // 130, as shells report it
	exitSIGTERM     = 128 + int(syscall.SIGTERM) // 143
)

type config struct {
	backend    string
	requireGPU bool
	timeout    time.Duration
	json       bool
	scenario   string
	discipline string
	nfdFile    string        // NFD feature file to write, or ""
	promFile   string        // node_exporter textfile to write, or ""
	interval   time.Duration // repeat every interval until SIGTERM; 0 runs once
	preflight  bool          // bring the GPU up in a preflight child first
	initWait   time.Duration // how long to wait for Init: timeout, and with the preflight its child's most
	watch      time.Duration // how long to watch the driver's health events before reporting
}

func main() {
	if name := os.Getenv(envChildScenario); name != "" {
		runChild(name)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usageText = `gpuprobe: check GPU bring-up and the re-entrant lazy-init paths that hung PyTorch.

Usage: gpuprobe [flags]

Examples:
  gpuprobe                                  probe cuda, then hip; without a usable GPU, say why and run on sim
  gpuprobe -require-gpu -json               a GPU host's check: no fallback, JSON on stdout
  gpuprobe -backend sim -scenario queued    only the queued-callback scenarios, simulated GPU
  gpuprobe -discipline legacy -timeout 3s   show the pre-fix hang and where it is stuck
  gpuprobe -require-gpu -interval 10m -nfd-file /etc/kubernetes/node-feature-discovery/features.d/gpuinit \
           -prom-file /var/lib/node_exporter/textfile/gpuinit.prom    a DaemonSet's loop
  GPUINIT_SIM_FAIL=no-device gpuprobe -backend sim    see how a missing GPU is reported

Flags:
`

const exitText = `
Exit status: 0 all ok; 1 a scenario hung or failed, initialization hung, the
RNG check failed, a device was lost while probed, or a fleet file (-nfd-file,
-prom-file) could not be written; 2 bad usage, including -require-gpu with
-backend sim (or GPUINIT_BACKEND=sim), and a GPUINIT_* value that cannot be
used (GPUINIT_PREFLIGHT, a library file or host root that is not there, a
misspelt variable's name, a GPUINIT_SIM_* value sim cannot use);
3 backend unavailable or no device (with -require-gpu, no usable GPU);
130 or 143 interrupted by SIGINT or SIGTERM (with -interval, a signal ends the
loop with 0).
`

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpuprobe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	defaultBackend := strings.TrimSpace(os.Getenv("GPUINIT_BACKEND"))
	if defaultBackend == "" {
		defaultBackend = "auto"
	}
	known := device.DefaultRegistry.Known()
	fs.StringVar(&cfg.backend, "backend", defaultBackend, "backend: "+strings.Join(known, ", ")+
		" (default: $"+"GPUINIT_BACKEND"+", else auto: "+strings.Join(device.DefaultRegistry.AutoOrder(), ", then ")+", else sim)")
	fs.BoolVar(&cfg.requireGPU, "require-gpu", false, "probe a GPU or fail: with auto, exit 3 instead of falling back to sim when no GPU backend is usable; with sim, refused (exit 2)")
	fs.DurationVar(&cfg.timeout, "timeout", 60*time.Second, "time limit for initialization and for each scenario")
	fs.BoolVar(&cfg.json, "json", false, "print the report as JSON (schema gpuprobe/v1, see the package doc)")
	fs.StringVar(&cfg.scenario, "scenario", "all", "scenarios to run: initialized, queued or all")
	fs.StringVar(&cfg.discipline, "discipline", "fixed", "initialization discipline: fixed (gpuinit's lazy) or legacy (PyTorch's pre-fix lock, hangs on purpose)")
	fs.StringVar(&cfg.nfdFile, "nfd-file", "", "write the verdict as Node Feature Discovery labels (gpuinit.io/...) to this feature file")
	fs.DurationVar(&cfg.watch, "watch", 0, "watch the driver's health events (Xid, ECC, RAS) this long before reporting")
	fs.StringVar(&cfg.promFile, "prom-file", "", "write node_exporter textfile metrics (gpuinit_*) to this .prom file")
	fs.DurationVar(&cfg.interval, "interval", 0, "repeat the probe every interval until SIGTERM, rewriting the files and printing the report each round; 0 runs once")
	fs.BoolVar(&cfg.preflight, "preflight", true, "run the driver's init in a child process first, under -timeout, so that a hang or crash there is reported with the child's stacks ($"+"GPUINIT_PREFLIGHT"+" overrides)")
	// The usage goes to stdout when asked for (-h), as the answer it is,
	// and to stderr after a flag's error.
	var usage bytes.Buffer
	fs.Usage = func() {
		fs.SetOutput(&usage)
		defer fs.SetOutput(stderr)
		fmt.Fprint(&usage, usageText)
		fs.PrintDefaults()
		fmt.Fprint(&usage, exitText)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = stdout.Write(usage.Bytes())
			return exitOK
		}
		_, _ = stderr.Write(usage.Bytes())
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
	if msg := checkBackend(fs, cfg, known); msg != "" {
		fmt.Fprintln(stderr, "gpuprobe:", msg)
		return exitUsage
	}
	if cfg.timeout <= 0 {
		fmt.Fprintln(stderr, "gpuprobe: -timeout must be positive")
		return exitUsage
	}
	if cfg.interval < 0 {
		fmt.Fprintln(stderr, "gpuprobe: -interval must not be negative")
		return exitUsage
	}
	selected, err := selectScenarios(cfg.scenario)
	if err != nil {
		fmt.Fprintln(stderr, "gpuprobe:", err)
		return exitUsage
	}

	ctx, interrupted, stop := interruptible()
	defer stop()
	if cfg.interval > 0 {
		return runRounds(ctx, cfg, len(selected), stdout, stderr)
	}
	rep := probe(ctx, cfg, selected, stderr)
	if sig := interrupted(); sig != nil {
		rep.markInterrupted(sig)
		rep.Verdict = rep.verdict()
	} else {
		publish(cfg, &rep, time.Now(), oneShotTTL, stderr)
	}
	writeReport(stdout, cfg, rep)
	return rep.ExitCode
}

// interruptible returns a context that SIGINT and SIGTERM cancel, a function
// that reports which of them arrived (nil if none), and stop, which releases
// the signals and waits for the goroutine that watches them.
func interruptible() (ctx context.Context, interrupted func() os.Signal, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	var mu sync.Mutex
	var got os.Signal
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case sig := <-signals:
			// A second signal gets the default action: a probe stuck in a
			// driver call that ignores ctx can still be stopped.
			signal.Stop(signals)
			mu.Lock()
			got = sig
			mu.Unlock()
			cancel()
		case <-done:
		}
	})
	interrupted = func() os.Signal {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
	stop = func() {
		signal.Stop(signals)
		close(done)
		wg.Wait()
		cancel()
	}
	return ctx, interrupted, stop
}
