//go:build linux && cgo

package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
)

// What the preflight costs, and how soon a GPU that recovers is served,
// measured over the fake libcuda whose cuInit takes 200 ms, side by side in
// one run (the README quotes the figures):
//
//	go test -run '^$' -bench BringUp -benchtime 10x ./examples/server
//
// Each iteration starts the server, probes readiness every millisecond until
// it is 200, and stops it. ms-to-ready is from the server's start to the
// first 200; without and with the preflight differ by the child's own
// 200 ms init and what the child costs besides.
func BenchmarkBringUp(b *testing.B) {
	lib := fakedriver.Build(b, fakedriver.CUDA)
	childtest.Binary(b) // built before any timing: startServer runs it
	env := []string{"GPUINIT_CUDA_LIBRARY=" + lib, "GPUINIT_FAKE_CUDA_INIT_DELAY_MS=200", "GPUINIT_PREFLIGHT="}
	for _, mode := range []struct {
		name      string
		preflight string
	}{{"in-process only", "0"}, {"with the preflight", "30s"}} {
		b.Run(mode.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				total += timeToReady(b, env, "-backend", "cuda", "-preflight", mode.preflight)
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-to-ready")
		})
	}
	b.Run("ready after the fake recovers", func(b *testing.B) {
		// The fake answers 802 to the first init of each run: the next
		// attempt comes a backoff later (1 s), and ms-after-backoff is
		// from that attempt's scheduled start to readiness.
		var after time.Duration
		for b.Loop() {
			counter := filepath.Join(b.TempDir(), "inits")
			after += readyAfterBackoff(b, append(env[:1:1], "GPUINIT_FAKE_CUDA_INIT=802",
				"GPUINIT_FAKE_CUDA_INIT_FAIL_TIMES=1", "GPUINIT_FAKE_CUDA_INIT_FAIL_FILE="+counter, "GPUINIT_PREFLIGHT="))
		}
		b.ReportMetric(float64(after.Microseconds())/1000/float64(b.N), "ms-after-backoff")
	})
}

// timeToReady starts the server and returns how long readiness took to be
// 200.
func timeToReady(b *testing.B, env []string, args ...string) time.Duration {
	b.Helper()
	start := time.Now()
	url, stop := startForBench(b, env, args...)
	defer stop()
	for {
		if resp, err := http.Get(url + health.ReadyPath); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start)
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// readyAfterBackoff starts the server over a fake that fails once, and
// returns how long after the retry's scheduled start readiness was 200.
func readyAfterBackoff(b *testing.B, env []string) time.Duration {
	b.Helper()
	url, stop := startForBench(b, env, "-backend", "cuda")
	defer stop()
	var next time.Time
	for {
		resp, err := http.Get(url + health.StatusPath)
		if err != nil {
			b.Fatal(err)
		}
		var st health.Status
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		if st.BringUp != nil && st.BringUp.NextAttempt != nil {
			next = *st.BringUp.NextAttempt
		}
		if st.Ready {
			if next.IsZero() {
				b.Fatal("ready without a retry: the fake did not fail once")
			}
			return time.Since(next)
		}
		time.Sleep(time.Millisecond)
	}
}

// startForBench starts the server and returns its URL and a function that
// stops it; readiness starts its init.
func startForBench(b *testing.B, env []string, args ...string) (string, func()) {
	b.Helper()
	url, cmd := startServer(b, env, args...)
	return url, func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
}
