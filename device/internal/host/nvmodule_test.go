package host

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// host builds a fake /dev and /proc with the given files and points Dev and Proc at
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
	t.Setenv(EnvDevRoot, dev)
	t.Setenv(EnvProcRoot, proc)
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
			s := ReadNVModule()
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
	s := ReadNVModule()
	assert.Len(t, s.GPUs, 2)
	assert.Equal(t, "nvidia0", filepath.Base(s.GPUs[0]))
	assert.Equal(t, "nvidia12", filepath.Base(s.GPUs[1]))
	assert.True(t, s.UVM)
}

// TestANodeIsAGPUsByItsNameAlone: nvidia and an index, as the driver names a
// GPU's node; never the control, UVM, modeset or caps nodes.
func TestANodeIsAGPUsByItsNameAlone(t *testing.T) {
	for name, gpu := range map[string]bool{
		"nvidia0": true, "nvidia7": true, "nvidia12": true,
		"nvidia": false, "nvidiactl": false, "nvidia-uvm": false, "nvidia-uvm-tools": false,
		"nvidia-modeset": false, "nvidia-caps": false, "nvidia0a": false, "nvidia-1": false,
		"xnvidia0": false, "": false,
	} {
		assert.Equal(t, gpu, isNVIDIANode(name), name)
	}
}

// FuzzRead checks ReadNVModule on any /proc/driver/nvidia/version: a version file
// that is there means the module is loaded, whatever it holds, and its line
// is one short line.
func FuzzRead(f *testing.F) {
	f.Add([]byte("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03  Wed Jun 11 06:36:17 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"))
	f.Add([]byte("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build  (dvs-builder@U16-I3-B03-4-3)  Fri Mar 14 18:47:35 UTC 2025\n"))
	f.Add([]byte("NVRM version: NVIDIA UNIX aarch64 Kernel Module  550.54.15"))
	f.Fuzz(func(t *testing.T, content []byte) {
		proc := t.TempDir()
		path := filepath.Join(proc, "driver/nvidia/version")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv(EnvDevRoot, t.TempDir())
		t.Setenv(EnvProcRoot, proc)
		s := ReadNVModule()
		if !reflect.DeepEqual(s, ReadNVModule()) {
			t.Fatal("two reads differ")
		}
		if strings.ContainsAny(s.Module, "\r\n") || len(s.Module) > maxVersionLine {
			t.Fatalf("the module's line is %d bytes: %q", len(s.Module), s.Module)
		}
		if _, evidence := s.Present(); !strings.Contains(evidence, "kernel module is loaded") {
			t.Fatalf("a version file is there, but Present says %q", evidence)
		}
		if p := s.Problem(); strings.Contains(p, "not loaded") {
			t.Fatalf("a version file is there, but Problem says %q", p)
		}
	})
}
