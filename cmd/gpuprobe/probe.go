package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/internal/hangcheck"
	"github.com/gpuinit/gpuinit/rng"
	"github.com/gpuinit/gpuinit/rng/philox"
	"golang.org/x/sync/errgroup"
)

// runtimeDeadlock is how the Go runtime reports a deadlock it can see (every
// goroutine blocked, no timer pending) instead of hanging.
const runtimeDeadlock = "fatal error: all goroutines are asleep - deadlock!"

// parallelChildren bounds how many scenario children run at once.
const parallelChildren = 4

// RNG check parameters: a fixed seed and an offset past the first block.
const (
	rngSeed   = 42
	rngOffset = 8
	rngCount  = 16
)

func probe(ctx context.Context, cfg config, selected []scenario, progress io.Writer) report {
	rep := report{Schema: schema, Discipline: cfg.discipline}
	rep.Backend = resolveBackend(cfg.backend, progress)
	rt, err := device.Open(rep.Backend)
	if err != nil {
		rep.Error = describe(err)
		rep.ExitCode = exitUnavailable
		return rep
	}
	if v, err := rt.DriverVersion(); err == nil {
		rep.DriverVersion = v
	}
	if rv, ok := rt.Backend().(interface{ RuntimeVersion() (int, error) }); ok {
		if v, err := rv.RuntimeVersion(); err == nil {
			rep.RuntimeVersion = v
		}
	}

	fmt.Fprintf(progress, "gpuprobe: initializing %s (timeout %s)\n", rep.Backend, cfg.timeout)
	initCtx, cancel := context.WithTimeout(ctx, cfg.timeout)
	start := time.Now()
	err = rt.Init(initCtx)
	timedOut := errors.Is(initCtx.Err(), context.DeadlineExceeded)
	cancel()
	rep.InitMillis = millis(time.Since(start))
	switch {
	case err != nil && timedOut:
		rep.Error = &errorInfo{Message: fmt.Sprintf("initialization did not finish within %s: the driver's init hangs", cfg.timeout)}
		rep.ExitCode = exitFailed
		return rep
	case err != nil:
		rep.Error = describe(err)
		rep.ExitCode = exitUnavailable
		return rep
	}
	devices, err := rt.Devices(ctx)
	if err != nil {
		rep.Error = describe(err)
		rep.ExitCode = exitUnavailable
		return rep
	}
	for _, d := range devices {
		rep.Devices = append(rep.Devices, deviceInfo{Ordinal: d.Ordinal, Name: d.Name, Arch: d.Arch, TotalMemory: d.TotalMemory})
	}

	rep.Scenarios = runScenarios(ctx, cfg, rep.Backend, selected, progress)
	rep.RNG = checkRNG(ctx, rt)

	rep.ExitCode = exitOK
	for _, s := range rep.Scenarios {
		if s.Verdict != string(hangcheck.OK) {
			rep.ExitCode = exitFailed
		}
	}
	if rep.RNG.Verdict == "mismatch" || rep.RNG.Verdict == "error" {
		rep.ExitCode = exitFailed
	}
	return rep
}

func runScenarios(ctx context.Context, cfg config, backend string, selected []scenario, progress io.Writer) []scenarioResult {
	self, err := os.Executable()
	results := make([]scenarioResult, len(selected))
	var g errgroup.Group
	g.SetLimit(parallelChildren)
	for i, sc := range selected {
		results[i] = scenarioResult{Name: sc.name, Description: sc.what}
		if err != nil {
			results[i].Verdict, results[i].Error = string(hangcheck.Error), "cannot find gpuprobe's own executable: "+err.Error()
			continue
		}
		g.Go(func() error {
			fmt.Fprintf(progress, "gpuprobe: scenario %s (%s discipline)\n", sc.name, cfg.discipline)
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(),
				envChildScenario+"="+sc.name, envChildDiscipline+"="+cfg.discipline, envChildBackend+"="+backend)
			r, err := hangcheck.Run(ctx, cmd, cfg.timeout)
			res := &results[i]
			res.DurationMillis = millis(r.Duration)
			switch {
			case err != nil:
				res.Verdict, res.Error = string(hangcheck.Error), err.Error()
			case r.Verdict == hangcheck.Hang || strings.Contains(r.Stderr, runtimeDeadlock):
				res.Verdict = string(hangcheck.Hang)
				res.Error = fmt.Sprintf("no answer within %s; goroutines of gpuinit at the timeout below", cfg.timeout)
				if r.Verdict != hangcheck.Hang {
					res.Error = "deadlock: the Go runtime found every goroutine blocked; goroutines of gpuinit below"
				}
				res.Dump = hangcheck.Goroutines(r.Stderr, 10, "gpuinit/")
			case r.Verdict == hangcheck.Error:
				res.Verdict, res.Error = string(hangcheck.Error), trimError(r.Stderr)
			default:
				res.Verdict = string(hangcheck.OK)
			}
			fmt.Fprintf(progress, "gpuprobe: scenario %s: %s\n", sc.name, res.Verdict)
			return nil
		})
	}
	_ = g.Wait() // the workers record their failures in results
	return results
}

// checkRNG draws from device 0's generator at a fixed seed and offset and
// compares with rng/philox in the backend's ordering.
func checkRNG(ctx context.Context, rt *device.Runtime) *rngResult {
	res := &rngResult{Seed: rngSeed, Offset: rngOffset, Count: rngCount, Ordering: "curand"}
	want := make([]uint32, rngCount)
	if rt.Name() == "hip" {
		res.Ordering = "rocrand"
		philox.FillSequential(want, rngSeed, rngOffset)
	} else {
		philox.FillCURAND(want, rngSeed, rngOffset)
	}
	if _, ok := rt.Backend().(device.GeneratorBackend); !ok {
		res.Verdict = "unsupported"
		return res
	}
	g := rng.New(rt)
	got := make([]uint32, rngCount)
	err := g.SetState(ctx, 0, rng.State{Seed: rngSeed, Offset: rngOffset})
	if err == nil {
		err = g.Generate(ctx, 0, got)
	}
	if err != nil {
		res.Verdict, res.Error = "error", err.Error()
		return res
	}
	res.Verdict = "match"
	for i := range got {
		if got[i] != want[i] {
			res.Verdict = "mismatch"
			res.FirstMismatch = &mismatch{Index: i, Device: got[i], Philox: want[i]}
			break
		}
	}
	return res
}

// describe turns an error into the report's form, with the driver's code,
// name and hint when there is a *device.DriverError inside.
func describe(err error) *errorInfo {
	info := &errorInfo{Message: err.Error()}
	var de *device.DriverError
	if errors.As(err, &de) {
		info.Code, info.Name, info.Hint = de.Code, de.Name, de.Hint
	}
	if errors.Is(err, device.ErrNoDevice) {
		info.Kind = "no-device"
	} else if errors.Is(err, device.ErrNotCompiled) {
		info.Kind = "not-compiled"
	}
	return info
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
