package nvmodule

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuinit/gpuinit/device/internal/hostfs"
	"github.com/stretchr/testify/assert"
)

// host builds a fake /dev and /proc with the given files and points hostfs at
// them.
func host(t *testing.T, files ...string) {
	t.Helper()
	dev, proc := t.TempDir(), t.TempDir()
	for _, f := range files {
		root := dev
		if filepath.Dir(f) == "driver/nvidia" {
			root = proc
		}
		path := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(hostfs.EnvDevRoot, dev)
	t.Setenv(hostfs.EnvProcRoot, proc)
}

func TestWhatTheKernelSideShows(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   []string
		present bool
		problem string
	}{
		{"nothing: a CPU-only host", nil, false, "the NVIDIA kernel module is not loaded"},
		{"the module, no device nodes (a container given no GPU)", []string{"driver/nvidia/version"}, false, "there is no /dev/nvidiactl"},
		{"control node only", []string{"driver/nvidia/version", "nvidiactl"}, false, "no /dev/nvidiaN does"},
		{"GPUs without nvidia-uvm", []string{"driver/nvidia/version", "nvidiactl", "nvidia0", "nvidia1"}, true, "there is no /dev/nvidia-uvm"},
		{"everything", []string{"driver/nvidia/version", "nvidiactl", "nvidia0", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}, true, ""},
		{"device nodes, module not in /proc (a container)", []string{"nvidiactl", "nvidia0", "nvidia-uvm"}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host(t, tc.files...)
			s := Read()
			present, evidence := s.Present()
			assert.Equal(t, tc.present, present, "present")
			assert.NotEmpty(t, evidence, "the evidence is said either way")
			if !present && s.Module != "" {
				assert.Contains(t, evidence, "given no GPU")
			}
			if tc.problem == "" {
				assert.Empty(t, s.Problem())
			} else {
				assert.Contains(t, s.Problem(), tc.problem)
			}
		})
	}
}

func TestGPUNodesAreOnlyTheNumberedOnes(t *testing.T) {
	host(t, "nvidiactl", "nvidia0", "nvidia12", "nvidia-uvm", "nvidia-modeset", "nvidia-caps")
	s := Read()
	assert.Len(t, s.GPUs, 2)
	assert.Equal(t, "nvidia0", filepath.Base(s.GPUs[0]))
	assert.Equal(t, "nvidia12", filepath.Base(s.GPUs[1]))
	assert.True(t, s.UVM)
}
