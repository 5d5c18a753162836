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
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/internal/hangcheck"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/gpuinit/gpuinit/rng"
	"golang.org/x/sync/errgroup"
)

// parallelChildren bounds how many scenario children run at once.
const parallelChildren = 4

// RNG check parameters: a fixed seed and an offset past the first block.
const (
	rngSeed   = 42
	rngOffset = 8
	rngCount  = 16
)

func probe(ctx context.Context, cfg config, selected []scenario, progress io.Writer) report {
	rep := report{Schema: schema, Discipline: cfg.discipline, Backend: cfg.backend}
	rt := bringUp(ctx, cfg, &rep, progress)
	if rt == nil {
		return rep
	}
	devices, err := rt.Devices(ctx)
	if err != nil {
		rep.fail(exitUnavailable, health.ErrorOf(err))
		return rep
	}
	for _, d := range devices {
		info := health.DeviceOf(d)
		// Memory, not MemoryInfo: the figure comes with its source.
		if m, err := rt.Memory(ctx, d.Ordinal); err == nil {
			info.FreeMemory, info.MemorySource = &m.Free, string(m.Source)
		} else {
			fmt.Fprintf(progress, "gpuprobe: device %d's free memory: %s\n", d.Ordinal, err)
		}
		rep.Devices = append(rep.Devices, info)
	}
	rep.Visibility = rt.Stats().Visibility
	if m, err := rt.DeviceMap(ctx); err == nil {
		rep.DeviceMap = deviceMapOf(m)
	} else {
		fmt.Fprintf(progress, "gpuprobe: the device map: %s\n", err)
	}
	rep.Scenarios = runScenarios(ctx, cfg, rep.Backend, selected, progress)
	rep.RNG = checkRNG(ctx, rt)
	checkHealth(ctx, rt, cfg.watch, &rep)

	rep.ExitCode = exitOK
	for _, s := range rep.Scenarios {
		if s.Verdict != string(hangcheck.OK) {
			rep.ExitCode = exitFailed
		}
	}
	if rep.RNG.Verdict == "mismatch" || rep.RNG.Verdict == "error" || len(rep.Lost) > 0 {
		rep.ExitCode = exitFailed
	}
	return rep
}

// bringUp opens and initializes the backend cfg names and records what it
// found in rep. With auto and no usable GPU it records each GPU backend's
// reason, with the driver version it read, and falls back to sim; with
// -require-gpu it records them as passed over and fails. It returns nil, with
// rep finished, when there is nothing to probe.
func bringUp(ctx context.Context, cfg config, rep *report, progress io.Writer) *device.Runtime {
	rt, err := device.Open(cfg.backend)
	if err == nil && cfg.preflight {
		// A driver that hangs or crashes in its init does so in a child,
		// whose stacks name the call; not-yet is reported, not retried: the
		// next round (or run) is the retry.
		p := device.Preflight{Deadline: cfg.timeout, RetryFor: -1}
		err = rt.UsePreflight(p)
		cfg.initWait = cfg.timeout + p.MaxWait()
	}
	if err == nil {
		fmt.Fprintf(progress, "gpuprobe: initializing %s (timeout %s)\n", cfg.backend, cfg.timeout)
		var stop bool
		stop, err = initialize(ctx, cfg, rt, rep)
		if b := rt.Stats().BringUp; b.Phase != "" || b.Attempts > 0 {
			rep.BringUp = health.BringUpOf(b)
		}
		rep.Class = device.ClassOf(err).String()
		if stop {
			return nil
		}
	}
	if err == nil {
		rep.Backend = rt.Name()
		rep.PassedOver = failures(progress, rt.Stats().PassedOver)
		return rt
	}
	if cfg.backend != "auto" {
		exit := exitUnavailable
		if errors.Is(err, driver.ErrInitHung) {
			exit = exitFailed // the driver's init hung: a failure, not a missing GPU
		}
		rep.fail(exit, health.ErrorOf(err))
		return nil
	}
	tried := failures(progress, triedBy(err))
	if cfg.requireGPU {
		// Nothing fell back: the reasons are what auto passed over, and
		// the backend stays what was asked.
		rep.PassedOver = tried
		rep.fail(exitUnavailable, health.ErrorOf(err))
		return nil
	}
	rep.Fallback = &fallback{Reason: "no usable GPU backend", Backends: tried}
	fmt.Fprintln(progress, "gpuprobe: no usable GPU backend; probing the simulated backend instead (-require-gpu turns this off)")
	rep.Backend = "sim"
	if rt, err = device.Open("sim"); err == nil {
		var stop bool
		stop, err = initialize(ctx, cfg, rt, rep)
		// sim's driver version is not this host's: the real drivers'
		// are in the fallback's entries.
		rep.DriverVersion, rep.RuntimeVersion = 0, 0
		if stop {
			return nil
		}
	}
	if err != nil {
		rep.fail(exitUnavailable, health.ErrorOf(err))
		return nil
	}
	return rt
}

// initialize runs rt's first Init under cfg.timeout and records the versions
// and how long it took. It returns Init's error, and stop, with rep finished,
// when there is no result to go on: init hung, never started, or was
// interrupted.
func initialize(ctx context.Context, cfg config, rt *device.Runtime, rep *report) (stop bool, err error) {
	startCtx, cancelStart := context.WithTimeout(ctx, cfg.timeout)
	defer cancelStart()
	start := time.Now()
	// Start under -timeout, so that a timeout too short to begin is said
	// so; then wait for the end as long as a preflight child may take, so
	// that a hung one's stacks arrive.
	if err = rt.Start(startCtx); err == nil {
		initCtx, cancel := context.WithTimeout(ctx, max(cfg.timeout, cfg.initWait))
		defer cancel()
		err = rt.Init(initCtx)
	}
	rep.InitMillis = millis(time.Since(start))
	if v, err := rt.DriverVersion(); err == nil {
		rep.DriverVersion = v
	}
	if v, err := rt.RuntimeVersion(); err == nil {
		rep.RuntimeVersion = v
	}
	switch {
	case err == nil:
		return false, nil
	case ctx.Err() != nil:
		rep.fail(exitFailed, &errorInfo{Message: "interrupted during initialization"})
	case errors.Is(err, context.DeadlineExceeded) && rt.Stats().State == lazy.Uninitialized:
		rep.fail(exitFailed, &errorInfo{Message: fmt.Sprintf("initialization did not start: the -timeout of %s expired before it could; use a longer one", cfg.timeout)})
	case errors.Is(err, context.DeadlineExceeded) && rt.Stats().State == lazy.Initializing:
		rep.fail(exitFailed, &errorInfo{Kind: string(hangcheck.Hang), Message: fmt.Sprintf("initialization did not finish within %s: the driver's init hangs", cfg.timeout)})
	default:
		return false, err // a failure of the backend's own
	}
	return true, err
}

// triedBy lists the backends auto passed over in err: every one a
// *device.NoBackendError names, or the single backend that failed.
func triedBy(err error) []device.BackendFailure {
	var nb *device.NoBackendError
	if errors.As(err, &nb) {
		return nb.Tried
	}
	name := "auto"
	var de *device.DriverError
	if errors.As(err, &de) {
		name = de.Backend
	}
	return []device.BackendFailure{{Backend: name, Err: err}}
}

// failures is the report's form of backends passed over, each also said on
// progress.
func failures(progress io.Writer, tried []device.BackendFailure) []backendFailure {
	var out []backendFailure
	for _, f := range tried {
		out = append(out, backendFailure{Backend: f.Backend, DriverVersion: f.DriverVersion, Error: health.ErrorOf(f.Err)})
		fmt.Fprintf(progress, "gpuprobe: %s passed over: %s\n", f.Backend, f.Err)
	}
	return out
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
			// -timeout counts from the scenario's start, not the process's,
			// which a loaded machine stretches; a child that never gets
			// there is hung at scenarioStartBound.
			r, err := hangcheck.RunWith(ctx, cmd, hangcheck.Limits{Timeout: cfg.timeout, Armed: scenarioArmed,
				ArmBound: max(cfg.timeout, scenarioStartBound)})
			r.Stderr = strings.Replace(r.Stderr, scenarioArmed+"\n", "", 1) // the marker is not the child's words
			results[i] = judge(sc, r, err, cfg.timeout)
			fmt.Fprintf(progress, "gpuprobe: scenario %s: %s\n", sc.name, results[i].Verdict)
			return nil
		})
	}
	_ = g.Wait() // the workers record their failures in results
	return results
}

// judge turns a child's run into the scenario's result.
func judge(sc scenario, r hangcheck.Result, err error, timeout time.Duration) scenarioResult {
	res := scenarioResult{Name: sc.name, Description: sc.what, DurationMillis: millis(r.Duration)}
	switch {
	case errors.Is(err, context.Canceled):
		res.Verdict, res.Error = string(hangcheck.Error), "interrupted: the child was stopped"
	case err != nil:
		res.Verdict, res.Error = string(hangcheck.Error), err.Error()
	case r.Verdict == hangcheck.Hang:
		// The child keeps a timer pending (runChild's heartbeat), so the Go
		// runtime never reports a deadlock: it hangs, as a server would.
		res.Verdict = string(hangcheck.Hang)
		res.Error = fmt.Sprintf("no answer within %s; goroutines of gpuinit at the timeout below", timeout)
		res.Dump = hangcheck.Goroutines(r.Stderr, 10, "gpuinit/")
		if res.Dump == "" {
			res.Dump = "no dump: the child had not started (or printed no goroutines) when the timeout expired"
		}
	case r.Verdict == hangcheck.Error:
		res.Verdict, res.Error = string(hangcheck.Error), trimError(r.Stderr)
	default:
		res.Verdict = string(hangcheck.OK)
	}
	return res
}

// checkRNG draws from device 0's generator at a fixed seed and offset and
// compares with rng/philox in the backend's ordering. A backend without
// generators, or without its RNG library, is "unsupported" with the reason:
// that is not a probe failure.
func checkRNG(ctx context.Context, rt *device.Runtime) *rngResult {
	ordering := rng.OrderingOf(rt)
	res := &rngResult{Seed: rngSeed, Offset: rngOffset, Count: rngCount, Ordering: ordering.String()}
	want := make([]uint32, rngCount)
	ordering.Fill(want, rngSeed, rngOffset)
	g := rng.New(rt)
	defer g.Close()
	got := make([]uint32, rngCount)
	err := g.SetState(ctx, 0, rng.State{Seed: rngSeed, Offset: rngOffset})
	if err == nil {
		err = g.Generate(ctx, 0, got)
	}
	switch {
	case errors.Is(err, device.ErrNotSupported):
		res.Verdict, res.Error = "unsupported", err.Error()
		return res
	case err != nil:
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

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
