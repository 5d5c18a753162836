package build

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildGpuprobe builds the repository's gpuprobe with cgo on or off.
func buildGpuprobe(t *testing.T, cgo bool) string {
	t.Helper()
	return childtest.BinaryOf(t, childtest.Build{Dir: "..", Package: "./cmd/gpuprobe",
		Env: []string{"CGO_ENABLED=" + map[bool]string{true: "1", false: "0"}[cgo]}})
}

func runScript(t *testing.T, env []string, script string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return out.String(), exitErr.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), 0
}

func TestCheckGPUBackendsFailsACgolessBuild(t *testing.T) {
	out, code := runScript(t, nil, "check-gpu-backends.sh", buildGpuprobe(t, false))
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "built without cgo, so it has no cuda or hip backend")
	out, code = runScript(t, nil, "check-gpu-backends.sh", buildGpuprobe(t, true))
	assert.Equal(t, 0, code, out)
}

// TestGPUSmokeFailsOnAnySkipOrFailure runs the GPU host's smoke test over
// fake and simulated hosts: it passes only where every check ran and passed.
func TestGPUSmokeFailsOnAnySkipOrFailure(t *testing.T) {
	// The repository's fake drivers, built as its own tests build them ($CC,
	// -Wall -Werror; the test skips where there is no C compiler).
	dir := t.TempDir()
	cuda := fakedriver.BuildInto(t, dir, fakedriver.CUDA)
	curand := fakedriver.BuildInto(t, dir, fakedriver.CURAND)
	for _, tc := range []struct {
		name string
		env  []string
		code int
		says string
	}{
		{"a CUDA host: everything passes", []string{"GPUINIT_CUDA_LIBRARY=" + cuda, "GPUINIT_CURAND_LIBRARY=" + curand}, 0, "gpu-smoke: ok"},
		{"no libcurand: the RNG check is unsupported", []string{"GPUINIT_CUDA_LIBRARY=" + cuda, "GPUINIT_CURAND_LIBRARY=" + fakedriver.NotInstalled("libcurand.so.10")}, 1, "the RNG check was unsupported"},
		{"no driver: gpuprobe fails and the hardware tests skip", fakedriver.NoGPUHost(t), 1, "hardware tests skipped"},
		{"sim: passes", []string{"GPU_SMOKE_BACKEND=sim"}, 0, "gpu-smoke: ok"},
		{"sim without a device: gpuprobe fails", []string{"GPU_SMOKE_BACKEND=sim", "GPUINIT_SIM_FAIL=no-device"}, 1, "gpuprobe exited 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append([]string{"GPU_SMOKE_OUT=" + t.TempDir()}, tc.env...)
			out, code := runScript(t, env, "gpu-smoke.sh")
			assert.Equal(t, tc.code, code, out)
			assert.Contains(t, out, tc.says)
			if tc.code != 0 {
				assert.True(t, strings.Contains(out, "gpu-smoke: FAILED"), out)
			}
		})
	}
}

func TestMain(m *testing.M) { childtest.Main(m) }
