//go:build linux

package main

import (
	"bytes"
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
	}, labels(t, features))
	metrics, err := os.ReadFile(prom)
	require.NoError(t, err)
	assert.Contains(t, string(metrics), `gpuinit_probe_success{backend="sim",verdict="ok"} 1`)
	assert.Contains(t, string(metrics), `gpuinit_devices{backend="sim"} 2`)
	for _, s := range rep.Scenarios {
		assert.Contains(t, string(metrics), `gpuinit_scenario_duration_seconds{scenario="`+s.Name+`",verdict="ok"}`)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary file left behind")
}

func TestFallingBackToSimIsNotAnOKNode(t *testing.T) {
	bin := buildProbe(t)
	nfd := filepath.Join(t.TempDir(), "gpuinit")
	r := probeRun(t, bin, fakedriver.NoGPUHost(t), "-scenario", "queued", "-nfd-file", nfd)
	require.Equal(t, exitOK, r.code)
	features, err := os.ReadFile(nfd)
	require.NoError(t, err)
	assert.Equal(t, "no-gpu", labels(t, features)["gpuinit.io/probe"], "sim says nothing about this node's GPUs: the class of the GPU runtime's failure")
}

// TestIntervalFollowsTheVerdictAndStopsOnSIGTERM switches the rounds between a
// working and a failing GPU while a reader polls the files.
func TestIntervalFollowsTheVerdictAndStopsOnSIGTERM(t *testing.T) {
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
			dir := t.TempDir()
			nfd, prom := filepath.Join(dir, "gpuinit"), filepath.Join(dir, "gpuinit.prom")
			r := probeRun(t, bin, []string{"GPUINIT_SIM_FAIL=" + tc.fail}, "-backend", "sim", "-json", "-timeout", "1s",
				"-nfd-file", nfd, "-prom-file", prom)
			rep := decode(t, r)
			features, err := os.ReadFile(nfd)
			require.NoError(t, err)
			assert.Equal(t, tc.label, labels(t, features)["gpuinit.io/probe"])
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
