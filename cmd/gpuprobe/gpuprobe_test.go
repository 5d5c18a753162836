package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/docnames"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain serves a scenario's child as main does, for tests that run
// scenarios in this binary's children. Started as gpuprobe (buildProbe's
// link), it is gpuprobe.
func TestMain(m *testing.M) {
	if name := os.Getenv(envChildScenario); name != "" {
		runChild(name)
	}
	childtest.MainOrProgram(m, "gpuprobe", main)
}

// buildProbe returns gpuprobe: this test binary as the program, or with
// GPUPROBE_TEST_TAGS set (such as cudalink) a go build with those tags. The
// scenarios run in children that re-execute it, so testing run() in-process
// would not do.
func buildProbe(t *testing.T) string {
	t.Helper()
	if flags := probeTags(); flags != nil {
		return childtest.Binary(t, flags...)
	}
	return childtest.Program(t)
}

// probeTags are the go build flags of GPUPROBE_TEST_TAGS, or nil.
func probeTags() []string {
	if tags := os.Getenv("GPUPROBE_TEST_TAGS"); tags != "" { // e.g. cudalink
		return []string{"-tags", tags}
	}
	return nil
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
	t.Parallel() // its children mostly wait: overlap them with the others'
	bin := buildProbe(t)

	t.Run("sim: every scenario ok, exit 0", func(t *testing.T) {
		t.Parallel()
		r := probeRun(t, bin, nil, "-backend", "sim", "-json", "-timeout", "30s")
		require.Equal(t, exitOK, r.code, "stderr:\n%s", r.stderr)
		rep := decode(t, r)
		assert.Equal(t, "sim", rep.Backend)
		assert.Equal(t, 12020, rep.DriverVersion)
		require.Len(t, rep.Devices, 2)
		d := rep.Devices[1]
		assert.Equal(t, "sm_90", d.Arch)
		assert.Equal(t, "9.0", d.ComputeCapability)
		assert.Equal(t, "GPU-5e1d0c0a-9a7f-4b6e-8d2c-000000000001", d.UUID)
		assert.Equal(t, "0000:19:00.0", d.PCIBusID)
		assert.Equal(t, 132, d.Multiprocessors)
		require.NotNil(t, d.FreeMemory)
		assert.Equal(t, uint64(77<<30), *d.FreeMemory)
		assert.Nil(t, rep.Fallback, "sim was asked for: no fallback")
		require.Len(t, rep.Scenarios, 6)
		for _, s := range rep.Scenarios {
			assert.Equal(t, "ok", s.Verdict, "%s: %s", s.Name, s.Error)
		}
		require.NotNil(t, rep.RNG)
		assert.Equal(t, "match", rep.RNG.Verdict)
		assert.Contains(t, r.stderr, "gpuprobe: scenario", "progress goes to stderr")
	})

	t.Run("legacy: both paths hang, exit 1, dump names the lock", func(t *testing.T) {
		t.Parallel()
		// -timeout counts from each scenario's start, where it deadlocks at
		// once: 500 ms is time enough to be stuck in the lock.
		r := probeRun(t, bin, nil, "-backend", "sim", "-json", "-discipline", "legacy", "-timeout", "500ms")
		require.Equal(t, exitFailed, r.code, "stderr:\n%s", r.stderr)
		rep := decode(t, r)
		doc, err := docnames.PackageDoc("doc.go")
		require.NoError(t, err)
		seen := map[string]bool{}
		for _, s := range rep.Scenarios {
			assert.Equal(t, "hang", s.Verdict, s.Name)
			// A re-entrant LazyCall blocks in Call; a callback's Init, in
			// Init, whether it was queued or ran on an initialized runtime.
			want := "internal/legacy.(*Initializer).Call"
			if strings.HasSuffix(s.Name, "/init-from-callback") {
				want = "internal/legacy.(*Initializer).Init"
			}
			assert.Equal(t, "github.com/gpuinit/gpuinit/"+want, blockedIn(s.Dump), "%s:\n%s", s.Name, s.Dump)
			named := regexp.MustCompile(`(^|\s)` + regexp.QuoteMeta(want) + `\s`)
			assert.True(t, named.MatchString(doc), "the package doc names %s, where %s blocks", want, s.Name)
			seen[strings.Split(s.Name, "/")[0]] = true
		}
		assert.True(t, seen["initialized"] && seen["queued"], "both re-entrant paths ran")
		assert.Less(t, r.took, 30*time.Second, "each child is cut off at its timeout")
	})

	t.Run("no device: exit 3 with the message and hint, no hang", func(t *testing.T) {
		t.Parallel()
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
		t.Parallel()
		for _, preflight := range []string{"true", "false"} {
			r := probeRun(t, bin, []string{"GPUINIT_SIM_FAIL=hang"}, "-backend", "sim", "-timeout", "300ms", "-preflight="+preflight)
			assert.Equal(t, exitFailed, r.code, "preflight %s:\n%s", preflight, r.stdout)
			rep := decode(t, probeRun(t, bin, []string{"GPUINIT_SIM_FAIL=hang"}, "-backend", "sim", "-timeout", "300ms", "-preflight="+preflight, "-json"))
			require.NotNil(t, rep.Error)
			assert.Equal(t, "hang", rep.Error.Kind)
			if preflight == "true" {
				assert.Contains(t, r.stdout, "hung: no answer within", "the child hung, not gpuprobe")
				assert.Equal(t, "not-yet", rep.Class)
			} else {
				assert.Contains(t, r.stdout, "initialization did not finish within 300ms")
			}
		}
	})

	t.Run("a timeout too short to start init is not called a hang", func(t *testing.T) {
		t.Parallel()
		r := probeRun(t, bin, nil, "-backend", "sim", "-timeout", "1ns")
		assert.Equal(t, exitFailed, r.code)
		assert.Contains(t, r.stdout, "initialization did not start: the -timeout of 1ns expired before it could")
		assert.NotContains(t, r.stdout, "hangs")
	})

	t.Run("GPUINIT_BACKEND is the default for -backend", func(t *testing.T) {
		t.Parallel()
		rep := decode(t, probeRun(t, bin, []string{"GPUINIT_BACKEND=sim"}, "-json", "-scenario", "queued"))
		assert.Equal(t, "sim", rep.Backend)
		assert.Nil(t, rep.Fallback)
	})

	t.Run("scenario selection", func(t *testing.T) {
		t.Parallel()
		rep := decode(t, probeRun(t, bin, nil, "-backend", "sim", "-json", "-scenario", "queued"))
		require.Len(t, rep.Scenarios, 3)
		for _, s := range rep.Scenarios {
			assert.True(t, strings.HasPrefix(s.Name, "queued/"), s.Name)
		}
	})

	t.Run("no usable GPU: each backend's reason, then sim, exit 0", func(t *testing.T) {
		t.Parallel()
		skipIfLinked(t)
		env := fakedriver.NoGPUHost(t)
		r := probeRun(t, bin, env, "-json", "-scenario", "queued")
		require.Equal(t, exitOK, r.code, "stderr:\n%s", r.stderr)
		rep := decode(t, r)
		assert.Equal(t, "sim", rep.Backend)
		require.NotNil(t, rep.Fallback)
		checkPassedOver(t, env, rep.Fallback.Backends)
		assert.Zero(t, rep.DriverVersion, "sim's driver version is not this host's")
		assert.Len(t, rep.Scenarios, 3, "the scenarios ran on sim")
		assert.Contains(t, r.stderr, "gpuprobe: cuda passed over: ")
		assert.Contains(t, r.stderr, "gpuprobe: hip passed over: ")
		assert.Contains(t, r.stderr, "-require-gpu turns this off")
	})

	t.Run("-require-gpu: no fallback, exit 3 with the reasons", func(t *testing.T) {
		t.Parallel()
		skipIfLinked(t)
		env := fakedriver.NoGPUHost(t)
		r := probeRun(t, bin, env, "-json", "-require-gpu")
		require.Equal(t, exitUnavailable, r.code, "stderr:\n%s", r.stderr)
		rep := decode(t, r)
		assert.Nil(t, rep.Fallback, "nothing fell back: sim never ran")
		assert.Equal(t, "auto", rep.Backend, "the backend asked for")
		checkPassedOver(t, env, rep.PassedOver)
		require.NotNil(t, rep.Error)
		want := "no-driver" // no driver loaded at all
		if noGPUKind(env, fakedriver.CUDANames) == "no-device" || noGPUKind(env, fakedriver.HIPNames) == "no-device" {
			want = "no-device" // the backend whose runtime loaded got furthest, and leads
		}
		assert.Equal(t, want, rep.Error.Kind, rep.Error.Message)
		assert.Empty(t, rep.Scenarios)
	})

	t.Run("real backend: devices, or no device reported as such", func(t *testing.T) {
		t.Parallel()
		tag := os.Getenv("GPUPROBE_TEST_BACKEND")
		if tag == "" {
			t.Skip("set GPUPROBE_TEST_BACKEND=cuda or hip (as .ci/run's legs do) to probe a real backend")
		}
		r := probeRun(t, bin, nil, "-backend", tag, "-json", "-timeout", "60s")
		rep := decode(t, r)
		switch r.code {
		case exitUnavailable:
			require.NotNil(t, rep.Error)
			assert.Equal(t, "no-device", rep.Error.Kind, rep.Error.Message)
			assert.NotEmpty(t, rep.Error.Hint)
			if tag == "cuda" {
				assert.Positive(t, rep.DriverVersion, "cuda reads the driver version before cuInit")
			}
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
		{"bad backend", nil, []string{"-backend", "metal"}, "want auto, cuda, hip, sim"},
		{"stray argument", nil, []string{"now"}, "unexpected arguments"},
		{"-require-gpu with -backend sim", nil, []string{"-require-gpu", "-backend", "sim"}, `-require-gpu asks for a GPU, but -backend "sim" is the simulated one`},
		{"-require-gpu with GPUINIT_BACKEND=sim", []string{"GPUINIT_BACKEND=sim"}, []string{"-require-gpu"}, `but GPUINIT_BACKEND="sim" (the default of -backend) is the simulated one`},
		{"GPUINIT_BACKEND in upper case", []string{"GPUINIT_BACKEND=CUDA"}, nil, `unknown GPUINIT_BACKEND="CUDA" (the default of -backend): did you mean "cuda"?`},
		{"-backend in another case", nil, []string{"-backend", "Sim"}, `unknown -backend "Sim": did you mean "sim"?`},
		{"-backend rocm", nil, []string{"-backend", "rocm"}, `unknown -backend "rocm": did you mean "hip"?`},
		{"the flag, not the variable, is wrong", []string{"GPUINIT_BACKEND=sim"}, []string{"-backend", "metal"}, `unknown -backend "metal": want auto`},
		{"bad GPUINIT_SIM_DEVICES", []string{"GPUINIT_SIM_DEVICES=lots"}, []string{"-backend", "sim"}, `GPUINIT_SIM_DEVICES="lots": want a whole number`},
		{"bad GPUINIT_SIM_FAIL through GPUINIT_BACKEND", []string{"GPUINIT_BACKEND=sim", "GPUINIT_SIM_FAIL=bogus"}, nil, `GPUINIT_SIM_FAIL="bogus": want one of`},
		{"bad GPUINIT_SIM_INIT_DELAY where auto may fall back to sim", []string{"GPUINIT_SIM_INIT_DELAY=soon"}, nil, `GPUINIT_SIM_INIT_DELAY="soon"`},
		{"bad GPUINIT_PREFLIGHT", []string{"GPUINIT_PREFLIGHT=bogus"}, nil, `GPUINIT_PREFLIGHT="bogus": want a deadline`},
		{"a library path that is not there", []string{"GPUINIT_CUDA_LIBRARY=/nonexistent/libcuda.so.1"}, []string{"-require-gpu"}, `GPUINIT_CUDA_LIBRARY="/nonexistent/libcuda.so.1" names no file`},
		{"a host root that is not there", []string{"GPUINIT_SYSFS_ROOT=/nonexistent"}, []string{"-backend", "hip"}, `GPUINIT_SYSFS_ROOT="/nonexistent" names no directory`},
		{"bad GPUINIT_RAS_PERIOD", []string{"GPUINIT_RAS_PERIOD=-1s"}, []string{"-backend", "hip"}, `GPUINIT_RAS_PERIOD="-1s" is not a positive duration`},
		{"a variable's name misspelt", []string{"GPUINIT_PREFLIHGT=30s"}, nil, `device: GPUINIT_PREFLIHGT is set, but gpuinit reads no such variable (did you mean GPUINIT_PREFLIGHT?): bad setting`},
		{"a variable's name with a word left out", []string{"GPUINIT_SIM_DELAY=3s"}, nil, `device: GPUINIT_SIM_DELAY is set, but gpuinit reads no such variable (did you mean GPUINIT_SIM_INIT_DELAY?): bad setting`},
		{"a variable's name with a word added", []string{"GPUINIT_PREFLIGHT_DEADLINE=30s"}, []string{"-backend", "sim"}, `did you mean GPUINIT_PREFLIGHT?`},
		{"a variable's name cut short", []string{"GPUINIT_CUDA_LIB=/x.so"}, []string{"-require-gpu"}, `did you mean GPUINIT_CUDA_LIBRARY?`},
		{"a variable gpuinit has none like", []string{"GPUINIT_COLOR=blue"}, nil, `GPUINIT_COLOR is set, but gpuinit reads no such variable: unset it`},
	} {
		t.Run("usage: "+tc.name, func(t *testing.T) {
			t.Parallel()
			r := probeRun(t, bin, tc.env, tc.args...)
			assert.Equal(t, exitUsage, r.code)
			assert.Contains(t, r.stderr, tc.want)
		})
	}

	t.Run("help shows examples, on stdout", func(t *testing.T) {
		t.Parallel()
		r := probeRun(t, bin, nil, "-h")
		assert.Equal(t, exitOK, r.code)
		assert.Empty(t, r.stderr, "the help asked for is the answer: stdout")
		assert.Contains(t, r.stdout, "Examples:")
		assert.Contains(t, r.stdout, "-discipline legacy -timeout 3s")
		assert.Contains(t, r.stdout, "initialization hung", "the exit statuses name every case")
		assert.Contains(t, r.stdout, "130 or 143 interrupted")
		assert.Contains(t, r.stdout, "a fleet file (-nfd-file,\n-prom-file) could not be written")
		assert.Contains(t, r.stdout, "with sim, refused (exit 2)", "-require-gpu's help says what it does with sim")
	})
	t.Run("a bad flag: the error and the usage on stderr", func(t *testing.T) {
		t.Parallel()
		r := probeRun(t, bin, nil, "-intervall=10m")
		assert.Equal(t, exitUsage, r.code)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "flag provided but not defined: -intervall")
		assert.Contains(t, r.stderr, "Examples:")
	})
}

// noGPUKind is the kind of error a backend whose runtime has the given file
// names gives on a host with no GPU: "no-driver" where the loader cannot find
// the runtime, "no-device" where one is installed with no GPU behind it.
func noGPUKind(env []string, names []string) string {
	if fakedriver.Loadable(env, names...) {
		return "no-device"
	}
	return "no-driver"
}

// checkPassedOver checks that auto's reasons on the no-GPU host env name
// cuda, then hip, each with the loader's or the driver's own message.
func checkPassedOver(t *testing.T, env []string, backends []backendFailure) {
	t.Helper()
	require.Len(t, backends, 2)
	for i, name := range []string{"cuda", "hip"} {
		assert.Equal(t, name, backends[i].Backend)
		require.NotNil(t, backends[i].Error)
		if cgoBackends {
			names := map[string][]string{"cuda": fakedriver.CUDANames, "hip": fakedriver.HIPNames}[name]
			kind := noGPUKind(env, names)
			assert.Equal(t, kind, backends[i].Error.Kind, "%s: %s", name, backends[i].Error.Message)
			if kind == "no-driver" {
				assert.Equal(t, "dlopen", backends[i].Error.Op)
				assert.Contains(t, backends[i].Error.Detail, "cannot open shared object file", "dlerror's text, in the detail")
			}
		} else {
			assert.Equal(t, "not-compiled", backends[i].Error.Kind)
			assert.Contains(t, backends[i].Error.Message, "without cgo", "the binary says why it has no GPU backends")
		}
	}
}

// skipIfLinked skips what only run-time loading can show, in a -tags
// cudalink leg (GPUPROBE_TEST_TAGS), whose binary links libcuda.
func skipIfLinked(t *testing.T) {
	t.Helper()
	if strings.Contains(os.Getenv("GPUPROBE_TEST_TAGS"), "cudalink") {
		t.Skip("-tags cudalink links the CUDA libraries: nothing is loaded at run time")
	}
}

// blockedIn is the function that called sync.(*Mutex).Lock in a goroutine
// dump, without its arguments: where the goroutine waits for the lock.
func blockedIn(dump string) string {
	lines := strings.Split(dump, "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "sync.(*Mutex).Lock(") {
			continue
		}
		for _, caller := range lines[i+1:] {
			if caller != "" && !strings.HasPrefix(caller, "\t") { // the next frame, past Lock's file line
				return caller[:max(0, strings.LastIndex(caller, "("))]
			}
		}
	}
	return ""
}
