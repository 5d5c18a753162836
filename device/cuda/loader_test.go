//go:build linux && cgo && !nocuda

package cuda

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/internal/host"
	"github.com/gpuinit/gpuinit/device/internal/loader"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMessagesThatFitTheCase: what each loading and init failure says is true
// for its case, and its advice fits it.
func TestMessagesThatFitTheCase(t *testing.T) {
	t.Parallel() // each case runs in a child of its own, with its own fakes' files
	skipIfLinked(t)
	env, _ := fake(t, fakedriver.CUDA)
	emptyProc, emptyDev := t.TempDir(), t.TempDir()
	nvml := fakedriver.Build(t, fakedriver.NVML)
	second := filepath.Join(t.TempDir(), "libcuda.so.1")
	src, err := os.ReadFile(envValue(env, EnvLibrary))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(second, src, 0o755))
	for _, tc := range []struct {
		name  string
		env   []string
		child string
	}{
		{"no device because the kernel module is not loaded: the hint says so", append(env, "GPUINIT_FAKE_CUDA_INIT=100",
			host.EnvProcRoot+"="+emptyProc, host.EnvDevRoot+"="+emptyDev, "WANT=module"), "TestChildMessages"},
		{"a file named as libcuda that is another library", append(env, EnvLibrary+"="+nvml, "WANT=not-libcuda"), "TestChildMessages"},
		{"the toolkit's stub: its description, and the file", append(env, "GPUINIT_FAKE_CUDA_STUB=1", "WANT=stub"), "TestChildMessages"},
		{"a second libcuda beside the one a cgo engine loaded", append(env, "PRELOAD="+envValue(env, EnvLibrary),
			EnvLibrary+"="+second, "WANT=second"), "TestChildMessages"},
		{"the same libcuda the engine loaded is used", append(env, "PRELOAD="+envValue(env, EnvLibrary), "WANT=same"), "TestChildMessages"},
	} {
		t.Run(tc.name, func(t *testing.T) { t.Parallel(); runChild(t, tc.child, tc.env...) })
	}
}

// envValue is name's last value in env.
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

func TestChildMessages(t *testing.T) {
	child(t)
	if p := os.Getenv("PRELOAD"); p != "" {
		_, err := loader.Load(loader.Spec{Backend: "engine", Names: []string{p}}) // as a cgo engine would
		require.NoError(t, err)
	}
	err := process.Init(context.Background())
	var de *device.DriverError
	switch os.Getenv("WANT") {
	case "module":
		require.ErrorIs(t, err, device.ErrNoDevice)
		require.ErrorAs(t, err, &de)
		assert.Contains(t, de.Hint, "the NVIDIA kernel module is not loaded", "cuda's no-device hint looks at the kernel side")
	case "not-libcuda":
		require.ErrorIs(t, err, device.ErrDriverMismatch)
		assert.Contains(t, err.Error(), "is not libcuda.so.1: it has no cuDriverGetVersion")
		assert.Contains(t, err.Error(), "point "+EnvLibrary+" at the driver's libcuda.so.1")
		assert.NotContains(t, err.Error(), "upgrade the NVIDIA driver", "it is no old driver")
	case "stub":
		require.ErrorAs(t, err, &de)
		assert.Equal(t, 34, de.Code)
		assert.Contains(t, err.Error(), "CUDA_ERROR_STUB_LIBRARY (34): ")
		assert.NotContains(t, err.Error(), "(34):  ", "no empty description")
		assert.Contains(t, de.Message, "loaded "+os.Getenv(EnvLibrary))
	case "second":
		require.ErrorIs(t, err, device.ErrDriverMismatch)
		assert.Contains(t, err.Error(), "is a second libcuda.so.1, but this process already has "+os.Getenv("PRELOAD"))
		assert.Contains(t, err.Error(), "point it at "+os.Getenv("PRELOAD"))
		assert.Equal(t, device.ClassNeedsOperator, device.ClassOf(err))
	case "same":
		require.NoError(t, err)
	default:
		t.Fatalf("WANT=%q", os.Getenv("WANT"))
	}
}
