//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// labels parses an NFD feature file's name=value lines.
func labels(t *testing.T, data []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if name, value, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			out[name] = value
		}
	}
	return out
}

func TestFleetFilesMatchTheReport(t *testing.T) {
	t.Parallel() // its children mostly wait: overlap them with the others'
	bin := buildProbe(t)
	dir := t.TempDir()
	nfd, prom := filepath.Join(dir, "gpuinit"), filepath.Join(dir, "gpuinit.prom")
	before := time.Now()
	r := probeRun(t, bin, nil, "-backend", "sim", "-json", "-nfd-file", nfd, "-prom-file", prom)
	after := time.Now()
	require.Equal(t, exitOK, r.code, r.stderr)
	rep := decode(t, r)
	features, err := os.ReadFile(nfd)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^# \+expiry-time=(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)$`).FindStringSubmatch(string(features))
	require.NotNil(t, m, "an expiry directive:\n%s", features)
	expiry, err := time.Parse(time.RFC3339, m[1])
	require.NoError(t, err)
	assert.WithinRange(t, expiry, before.Add(oneShotTTL).Truncate(time.Second), after.Add(oneShotTTL), "a single run's labels expire an hour on")
	assert.Equal(t, map[string]string{
		"gpuinit.io/probe": "ok", "gpuinit.io/backend": rep.Backend, "gpuinit.io/driver-version": "12020",
		"gpuinit.io/devices": "2", "gpuinit.io/arch.sm_90": "true", "gpuinit.io/rng": rep.RNG.Verdict,
		"gpuinit.io/health": "healthy",
	}, labels(t, features))
	metrics, err := os.ReadFile(prom)
	require.NoError(t, err)
	assert.Contains(t, string(metrics), `gpuinit_probe_success{backend="sim",verdict="ok"} 1`)
	assert.Contains(t, string(metrics), `gpuinit_devices{backend="sim"} 2`)
	assert.Contains(t, string(metrics), `gpuinit_device_verdict{backend="sim",ordinal="1",uuid="`+rep.Devices[1].UUID+`",verdict="healthy"} 1`)
	assert.Contains(t, string(metrics), `gpuinit_device_verdict{backend="sim",ordinal="1",uuid="`+rep.Devices[1].UUID+`",verdict="unknown"} 0`)
	for _, s := range rep.Scenarios {
		assert.Contains(t, string(metrics), `gpuinit_scenario_duration_seconds{scenario="`+s.Name+`",verdict="ok"}`)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary file left behind")
}

// TestFallingBackToSimIsNotAnOKNode: the run exits 0 (sim passed), as the
// package doc says, and its report says the same verdict as the label and the metric.
func TestFallingBackToSimIsNotAnOKNode(t *testing.T) {
	t.Parallel() // its children mostly wait: overlap them with the others'
	bin := buildProbe(t)
	dir := t.TempDir()
	nfd, prom := filepath.Join(dir, "gpuinit"), filepath.Join(dir, "gpuinit.prom")
	env := fakedriver.NoGPUHost(t)
	r := probeRun(t, bin, env, "-scenario", "queued", "-json", "-nfd-file", nfd, "-prom-file", prom)
	require.Equal(t, exitOK, r.code)
	rep := decode(t, r)
	features, err := os.ReadFile(nfd)
	require.NoError(t, err)
	got := labels(t, features)
	assert.Equal(t, "no-gpu", got["gpuinit.io/probe"], "sim says nothing about this node's GPUs: the class of the GPU runtime's failure")
	require.NotNil(t, rep.Fallback)
	assert.Equal(t, rep.Fallback.Backends[0].Error.Kind, got["gpuinit.io/reason"], "the reason, by the first backend's kind")
	for name := range got {
		assert.False(t, strings.HasPrefix(name, "gpuinit.io/arch.") || strings.HasPrefix(name, "gpuinit.io/mig-") ||
			name == "gpuinit.io/devices" || name == "gpuinit.io/backend" || name == "gpuinit.io/rng",
			"no label claims a GPU that is not there: %s=%s", name, got[name])
	}
	assert.Equal(t, "no-gpu", rep.Verdict, "the report says the label's verdict")
	metrics, err := os.ReadFile(prom)
	require.NoError(t, err)
	assert.Contains(t, string(metrics), `gpuinit_probe_success{backend="sim",verdict="no-gpu"} 0`)
	// What failed is labelled with the backend that failed: sim neither
	// failed nor has GPUs of this node's.
	require.NotEmpty(t, rep.Fallback.Backends)
	for _, b := range rep.Fallback.Backends {
		assert.Contains(t, string(metrics), `gpuinit_devices{backend="`+b.Backend+`"} 0`)
		assert.Contains(t, string(metrics), `gpuinit_init_failure{backend="`+b.Backend+`",class="`+b.Error.Class+`"} 1`)
	}
	assert.NotContains(t, string(metrics), `gpuinit_devices{backend="sim"}`, "sim's devices are no GPUs of this node's")
	assert.NotContains(t, string(metrics), `gpuinit_init_failure{backend="sim"`, "sim did not fail")
	assert.NotContains(t, string(metrics), "gpuinit_device_", "no per-device GPU series")
	text := probeRun(t, bin, env, "-scenario", "queued")
	assert.Contains(t, text.stdout, "result      ok on sim; this node's verdict (gpuinit.io/probe, gpuinit_probe_success): no-gpu\n")
}

// TestAFleetFileThatCannotBeWrittenIsAnError: the other file is written all
// the same, and the report has the error and exit 1.
func TestAFleetFileThatCannotBeWrittenIsAnError(t *testing.T) {
	t.Parallel() // its children mostly wait: overlap them with the others'
	bin := buildProbe(t)
	dir := t.TempDir()
	nfd, prom := filepath.Join(dir, "missing", "gpuinit"), filepath.Join(dir, "gpuinit.prom")
	r := probeRun(t, bin, nil, "-backend", "sim", "-scenario", "queued", "-json", "-nfd-file", nfd, "-prom-file", prom)
	assert.Equal(t, exitFailed, r.code, "stderr:\n%s", r.stderr)
	rep := decode(t, r)
	require.NotNil(t, rep.Error, "the JSON says why it failed")
	assert.Equal(t, "fleet-files", rep.Error.Kind)
	assert.Contains(t, rep.Error.Message, "writing the NFD feature file")
	assert.Equal(t, "ok", rep.Verdict, "the files say the probe's verdict, not their own writing's")
	metrics, err := os.ReadFile(prom)
	require.NoError(t, err, "the metrics are written though the labels could not be")
	assert.Contains(t, string(metrics), `gpuinit_probe_success{backend="sim",verdict="ok"} 1`)
}

// TestIntervalPrintsEachRoundsReport: stdout has each round's report, as
// text, or one JSON document per round.
func TestIntervalPrintsEachRoundsReport(t *testing.T) {
	t.Parallel() // its children mostly wait: overlap them with the others'
	bin := buildProbe(t)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			args := []string{"-backend", "sim", "-scenario", "queued", "-interval", "100ms"}
			if format == "json" {
				args = append(args, "-json")
			}
			cmd := exec.Command(bin, args...)
			var stdout, stderr lockedBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			rounds := func() int {
				if format == "text" {
					return strings.Count(stdout.String(), "result      ok\n")
				}
				dec, n := json.NewDecoder(strings.NewReader(stdout.String())), 0
				for {
					var rep report
					if dec.Decode(&rep) != nil || rep.Schema != schema || rep.ExitCode != exitOK {
						return n
					}
					n++
				}
			}
			require.Eventually(t, func() bool { return rounds() >= 2 }, 30*time.Second, 20*time.Millisecond,
				"two rounds' reports on stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			assert.NoError(t, cmd.Wait())
		})
	}
}

// TestAnUnwritableFeatureFileLeavesTheMetricsCurrent: under -interval, a
// feature file that cannot be written does not stop the metrics from
// following the verdict, and each round's report has the error.
func TestAnUnwritableFeatureFileLeavesTheMetricsCurrent(t *testing.T) {
	t.Parallel() // its children mostly wait: overlap them with the others'
	bin := buildProbe(t)
	dir := t.TempDir()
	nfd, prom, hook := filepath.Join(dir, "missing", "gpuinit"), filepath.Join(dir, "gpuinit.prom"), filepath.Join(dir, "round.env")
	require.NoError(t, os.WriteFile(hook, nil, 0o644))
	cmd := exec.Command(bin, "-backend", "sim", "-scenario", "queued", "-json", "-interval", "100ms", "-nfd-file", nfd, "-prom-file", prom)
	cmd.Env = append(os.Environ(), envRoundEnvFile+"="+hook)
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	metricsSay := func(line string) func() bool {
		return func() bool {
			b, _ := os.ReadFile(prom)
			return strings.Contains(string(b), line)
		}
	}
	require.Eventually(t, metricsSay(`gpuinit_probe_success{backend="sim",verdict="ok"} 1`), 30*time.Second, 20*time.Millisecond,
		"stderr:\n%s", stderr.String())
	require.NoError(t, os.WriteFile(hook, []byte("GPUINIT_SIM_FAIL=no-device\n"), 0o644))
	require.Eventually(t, metricsSay(`gpuinit_probe_success{backend="sim",verdict="no-gpu"} 0`), 30*time.Second, 20*time.Millisecond,
		"the metrics follow the verdict; stderr:\n%s", stderr.String())
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
	var first report
	require.NoError(t, json.NewDecoder(strings.NewReader(stdout.String())).Decode(&first))
	require.NotNil(t, first.Error)
	assert.Equal(t, "fleet-files", first.Error.Kind)
	assert.Equal(t, exitFailed, first.ExitCode)
	assert.Contains(t, stderr.String(), "writing the NFD feature file")
}

// TestIntervalFollowsTheVerdictAndStopsOnSIGTERM switches the rounds between a
// working and a failing GPU while a reader polls the files.
func TestIntervalFollowsTheVerdictAndStopsOnSIGTERM(t *testing.T) {
	t.Parallel() // its children mostly wait: overlap them with the others'
	bin := buildProbe(t)
	dir := t.TempDir()
	nfd, prom, hook := filepath.Join(dir, "gpuinit"), filepath.Join(dir, "gpuinit.prom"), filepath.Join(dir, "round.env")
	require.NoError(t, os.WriteFile(hook, nil, 0o644))
	cmd := exec.Command(bin, "-backend", "sim", "-scenario", "queued", "-interval", "200ms", "-nfd-file", nfd, "-prom-file", prom)
	cmd.Env = append(os.Environ(), envRoundEnvFile+"="+hook)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	// A reader polls both files throughout and must never see part of one.
	var stop atomic.Bool
	var torn atomic.Value
	var reader sync.WaitGroup
	reader.Go(func() {
		for !stop.Load() {
			if b, err := os.ReadFile(nfd); err == nil && (!bytes.HasSuffix(b, []byte("\n")) || !bytes.Contains(b, []byte("# +expiry-time=")) || !bytes.Contains(b, []byte("gpuinit.io/probe="))) {
				torn.Store(string(b))
			}
			if b, err := os.ReadFile(prom); err == nil && !bytes.Contains(b, []byte("gpuinit_probe_timestamp_seconds ")) {
				torn.Store(string(b))
			}
		}
	})
	verdict := func() string {
		b, _ := os.ReadFile(nfd)
		return labels(t, b)["gpuinit.io/probe"]
	}
	waitFor := func(want string) {
		t.Helper()
		require.Eventually(t, func() bool { return verdict() == want }, 30*time.Second, 20*time.Millisecond,
			"the labels never said %s; stderr:\n%s", want, stderr.String())
	}
	waitFor("ok")
	require.NoError(t, os.WriteFile(hook, []byte("GPUINIT_SIM_FAIL=no-device\n"), 0o644))
	waitFor("no-gpu")
	// The round writes the feature file, then the metrics: wait for both.
	assert.Eventually(t, func() bool {
		b, _ := os.ReadFile(prom)
		return strings.Contains(string(b), `gpuinit_probe_success{backend="sim",verdict="no-gpu"} 0`)
	}, 10*time.Second, 10*time.Millisecond, "a failing round writes its failure")
	require.NoError(t, os.WriteFile(hook, nil, 0o644))
	waitFor("ok")
	stop.Store(true)
	reader.Wait()
	assert.Nil(t, torn.Load(), "a reader saw part of a file")

	// Stop it while a round runs, so that there are children to leave behind.
	var kids []int
	require.Eventually(t, func() bool {
		kids = childtest.Children(cmd.Process.Pid)
		for _, k := range kids {
			kids = append(kids, childtest.Children(k)...)
		}
		return len(kids) > 0
	}, 10*time.Second, time.Millisecond, "a round in progress")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		assert.NoError(t, err, "a signal ends the loop with status 0")
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not end the loop within one interval and a round")
	}
	for _, k := range kids {
		assert.Eventually(t, func() bool { return !childtest.Alive(k) }, 5*time.Second, 20*time.Millisecond, "round child %d left behind", k)
	}
}

// TestTheLabelSaysTheFailuresClass: an operator's rule can tell a node with
// no GPU from one whose GPU is coming up, one that needs them, and one whose
// driver hangs in its init.
func TestTheLabelSaysTheFailuresClass(t *testing.T) {
	t.Parallel() // its children mostly wait: overlap them with the others'
	bin := buildProbe(t)
	for _, tc := range []struct {
		fail, label string
	}{
		{"no-device", "no-gpu"},
		{"not-ready", "not-yet"},
		{"driver-mismatch", "needs-operator"},
		{"hang", "hang"},
	} {
		t.Run(tc.fail, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			nfd, prom := filepath.Join(dir, "gpuinit"), filepath.Join(dir, "gpuinit.prom")
			r := probeRun(t, bin, []string{"GPUINIT_SIM_FAIL=" + tc.fail}, "-backend", "sim", "-json", "-timeout", "300ms",
				"-nfd-file", nfd, "-prom-file", prom)
			rep := decode(t, r)
			features, err := os.ReadFile(nfd)
			require.NoError(t, err)
			// The verdict and its reason only: sim's devices are no GPU of
			// this node's, so no backend, device or arch label.
			assert.Equal(t, map[string]string{"gpuinit.io/probe": tc.label, "gpuinit.io/reason": tc.fail},
				labels(t, features), "the whole label set after a failed bring-up")
			require.NotNil(t, rep.BringUp, "the report says how the bring-up went")
			assert.Equal(t, 1, rep.BringUp.Attempts)
			metrics, err := os.ReadFile(prom)
			require.NoError(t, err)
			class := map[string]string{"hang": "not-yet"}[tc.label]
			if class == "" {
				class = tc.label
			}
			assert.Equal(t, class, rep.Class)
			assert.Contains(t, string(metrics), `gpuinit_init_failure{backend="sim",class="`+class+`"} 1`)
			assert.Contains(t, string(metrics), `gpuinit_preflight_attempts{backend="sim"} 1`)
		})
	}
}
