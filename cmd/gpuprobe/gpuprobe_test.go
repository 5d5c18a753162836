package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildProbe builds the real binary once per test run: the scenarios run in
// children that re-execute it, so testing run() in-process would not do.
func buildProbe(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gpuprobe")
	args := []string{"build", "-o", bin}
	if tags := os.Getenv("GPUPROBE_TEST_TAGS"); tags != "" {
		args = append(args, "-tags", tags)
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

type probeResult struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

func probeRun(t *testing.T, bin string, env []string, args ...string) probeResult {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := probeResult{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		r.code = exitErr.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return r
}

func decode(t *testing.T, r probeResult) report {
	t.Helper()
	var rep report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), "stdout is JSON:\n%s", r.stdout)
	assert.Equal(t, "gpuprobe/v1", rep.Schema)
	assert.Equal(t, r.code, rep.ExitCode, "exit_code matches the exit status")
	return rep
}

func TestGpuprobeEndToEnd(t *testing.T) {
	bin := buildProbe(t)

	t.Run("sim: every scenario ok, exit 0", func(t *testing.T) {
		r := probeRun(t, bin, nil, "-backend", "sim", "-json", "-timeout", "30s")
		require.Equal(t, exitOK, r.code, "stderr:\n%s", r.stderr)
		rep := decode(t, r)
		assert.Equal(t, "sim", rep.Backend)
		assert.Equal(t, 12020, rep.DriverVersion)
		require.Len(t, rep.Devices, 2)
		assert.Equal(t, "sm_90", rep.Devices[0].Arch)
		require.Len(t, rep.Scenarios, 6)
		for _, s := range rep.Scenarios {
			assert.Equal(t, "ok", s.Verdict, "%s: %s", s.Name, s.Error)
		}
		require.NotNil(t, rep.RNG)
		assert.Equal(t, "match", rep.RNG.Verdict)
		assert.Contains(t, r.stderr, "gpuprobe: scenario", "progress goes to stderr")
	})

	t.Run("legacy: both paths hang, exit 1, dump names the lock", func(t *testing.T) {
		r := probeRun(t, bin, nil, "-backend", "sim", "-json", "-discipline", "legacy", "-timeout", "3s")
		require.Equal(t, exitFailed, r.code, "stderr:\n%s", r.stderr)
		rep := decode(t, r)
		seen := map[string]bool{}
		for _, s := range rep.Scenarios {
			assert.Equal(t, "hang", s.Verdict, s.Name)
			assert.Contains(t, s.Dump, "sync.(*Mutex).Lock", s.Name)
			assert.Contains(t, s.Dump, "internal/legacy.(*Initializer)", s.Name)
			seen[strings.Split(s.Name, "/")[0]] = true
		}
		assert.True(t, seen["initialized"] && seen["queued"], "both re-entrant paths ran")
		assert.Less(t, r.took, 30*time.Second, "each child is cut off at its timeout")
	})

	t.Run("no device: exit 3 with the message and hint, no hang", func(t *testing.T) {
		r := probeRun(t, bin, []string{"GPUINIT_SIM_FAIL=no-device"}, "-backend", "sim", "-json")
		require.Equal(t, exitUnavailable, r.code, "stderr:\n%s", r.stderr)
		rep := decode(t, r)
		require.NotNil(t, rep.Error)
		assert.Equal(t, "no-device", rep.Error.Kind)
		assert.Equal(t, 100, rep.Error.Code)
		assert.Equal(t, "CUDA_ERROR_NO_DEVICE", rep.Error.Name)
		assert.Contains(t, rep.Error.Hint, "CUDA_VISIBLE_DEVICES")
		assert.Empty(t, rep.Scenarios)
		assert.Less(t, r.took, 10*time.Second)

		text := probeRun(t, bin, []string{"GPUINIT_SIM_FAIL=no-device"}, "-backend", "sim")
		assert.Equal(t, exitUnavailable, text.code)
		assert.Contains(t, text.stdout, "CUDA_ERROR_NO_DEVICE")
		assert.NotContains(t, text.stdout, "hang")
	})

	t.Run("init that hangs is reported as such", func(t *testing.T) {
		r := probeRun(t, bin, []string{"GPUINIT_SIM_FAIL=hang"}, "-backend", "sim", "-timeout", "1s")
		assert.Equal(t, exitFailed, r.code)
		assert.Contains(t, r.stdout, "initialization did not finish within 1s")
	})

	t.Run("scenario selection", func(t *testing.T) {
		rep := decode(t, probeRun(t, bin, nil, "-backend", "sim", "-json", "-scenario", "queued"))
		require.Len(t, rep.Scenarios, 3)
		for _, s := range rep.Scenarios {
			assert.True(t, strings.HasPrefix(s.Name, "queued/"), s.Name)
		}
	})

	t.Run("default backend without GPU backends says so in one line", func(t *testing.T) {
		if os.Getenv("GPUPROBE_TEST_TAGS") != "" {
			t.Skip("a GPU backend is compiled in")
		}
		r := probeRun(t, bin, nil, "-scenario", "queued")
		assert.Equal(t, exitOK, r.code)
		assert.Contains(t, r.stderr, "gpuprobe: no GPU backend compiled in (build with -tags cuda or -tags hip); using sim\n")
	})

	t.Run("real backend: devices, or no device reported as such", func(t *testing.T) {
		tag := os.Getenv("GPUPROBE_TEST_TAGS")
		if tag == "" {
			t.Skip("set GPUPROBE_TEST_TAGS=cuda or hip (as .ci/run's legs do) to probe a real backend")
		}
		r := probeRun(t, bin, nil, "-backend", tag, "-json", "-timeout", "60s")
		rep := decode(t, r)
		switch r.code {
		case exitUnavailable:
			require.NotNil(t, rep.Error)
			assert.Equal(t, "no-device", rep.Error.Kind, rep.Error.Message)
			assert.NotEmpty(t, rep.Error.Hint)
			assert.Positive(t, rep.DriverVersion, "the driver version is read before init")
		case exitOK:
			assert.NotEmpty(t, rep.Devices)
		default:
			t.Fatalf("exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		t.Logf("gpuprobe -backend %s:\n%s", tag, r.stdout)
	})

	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"unknown flag", nil, []string{"-bogus"}, "flag provided but not defined"},
		{"bad discipline", nil, []string{"-discipline", "strict"}, "want fixed or legacy"},
		{"bad scenario", nil, []string{"-scenario", "some"}, "want initialized, queued or all"},
		{"bad backend", nil, []string{"-backend", "metal"}, "want auto, cuda, hip or sim"},
		{"stray argument", nil, []string{"now"}, "unexpected arguments"},
	} {
		t.Run("usage: "+tc.name, func(t *testing.T) {
			r := probeRun(t, bin, tc.env, tc.args...)
			assert.Equal(t, exitUsage, r.code)
			assert.Contains(t, r.stderr, tc.want)
		})
	}

	t.Run("help shows examples", func(t *testing.T) {
		r := probeRun(t, bin, nil, "-h")
		assert.Equal(t, exitOK, r.code)
		assert.Contains(t, r.stderr, "Examples:")
		assert.Contains(t, r.stderr, "-discipline legacy -timeout 3s")
	})
}
