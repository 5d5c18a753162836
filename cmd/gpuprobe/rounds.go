package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/gpuinit/gpuinit/internal/hangcheck"
)

// envRoundEnvFile is a test hook: a file of KEY=VALUE lines added to each
// round's environment when it starts, so that a test can change what a round
// sees (GPUINIT_SIM_FAIL, say) while the loop runs.
const envRoundEnvFile = "GPUPROBE_TEST_ROUND_ENV"

// runRounds repeats the probe every cfg.interval until ctx ends (SIGTERM or
// SIGINT), writing the fleet files after each round. Each round is a child
// process, this binary with -json, so that each brings the GPU up afresh: a
// driver that broke since the last round is seen, and a failing round writes
// its failure instead of leaving the last good verdict in place. Each round's
// report goes to stdout, as text or (-json) one JSON document per round. It
// returns 0 when a signal ends the loop.
func runRounds(ctx context.Context, cfg config, scenarios int, stdout, stderr io.Writer) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "gpuprobe: cannot find its own executable:", err)
		return exitFailed
	}
	limit := roundLimit(cfg.timeout, scenarios)
	// Labels last three rounds, and never less than one round's longest run,
	// so that a slow or hung round does not let them lapse.
	ttl := max(3*cfg.interval, cfg.interval+limit)
	for round := 1; ; round++ {
		start := time.Now()
		rep := probeRound(ctx, cfg, self, limit)
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "gpuprobe: stopped during round %d\n", round)
			return exitOK
		}
		// The expiry counts from the write: rounds that hang one after
		// another write at most interval + limit apart, within ttl.
		publish(cfg, &rep, time.Now(), ttl, stderr)
		fmt.Fprintf(stderr, "gpuprobe: round %d: %s (exit %d)\n", round, rep.Verdict, rep.ExitCode)
		writeReport(stdout, cfg, rep)
		select {
		case <-ctx.Done():
			fmt.Fprintf(stderr, "gpuprobe: stopped after round %d\n", round)
			return exitOK
		case <-time.After(time.Until(start.Add(cfg.interval))):
		}
	}
}

// probeRound runs one probe in a child and returns its report; a child that
// gives none is a failed round, with the reason.
func probeRound(ctx context.Context, cfg config, self string, limit time.Duration) report {
	args := []string{"-json", "-backend", cfg.backend, "-timeout", cfg.timeout.String(),
		"-scenario", cfg.scenario, "-discipline", cfg.discipline}
	if cfg.requireGPU {
		args = append(args, "-require-gpu")
	}
	args = append(args, fmt.Sprintf("-preflight=%t", cfg.preflight), "-watch", cfg.watch.String())
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), roundEnv()...)
	r, err := hangcheck.Run(ctx, cmd, limit)
	var rep report
	if err == nil && json.Unmarshal([]byte(r.Stdout), &rep) == nil && rep.Schema == schema {
		return rep
	}
	rep = report{Schema: schema, Backend: cfg.backend, Discipline: cfg.discipline, ExitCode: exitFailed}
	switch {
	case err != nil:
		rep.Error = &errorInfo{Message: "the round could not run: " + err.Error()}
	case r.Verdict == hangcheck.Hang:
		rep.Error = &errorInfo{Kind: string(hangcheck.Hang), Message: "the round's probe did not finish"}
	default:
		rep.Error = &errorInfo{Message: "the round's probe gave no report: " + trimError(r.Stderr)}
	}
	return rep
}

// roundLimit bounds one round: the child times out its own init, then its
// scenarios, parallelChildren at a time, each batch within timeout; a minute
// more bounds the rest.
func roundLimit(timeout time.Duration, scenarios int) time.Duration {
	batches := (scenarios + parallelChildren - 1) / parallelChildren
	return time.Duration(1+batches)*timeout + time.Minute
}

// roundEnv reads the test hook's file, if set.
func roundEnv() []string {
	path := os.Getenv(envRoundEnvFile)
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var env []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.Contains(line, "=") {
			env = append(env, line)
		}
	}
	return env
}
