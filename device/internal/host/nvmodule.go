package host

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// NVModule is what the kernel side shows.
type NVModule struct {
	Loaded  bool     // /proc/driver/nvidia/version exists: the module is loaded
	Module  string   // the first line of that file, trimmed, for messages; "" when it has none
	Control bool     // /dev/nvidiactl exists
	UVM     bool     // /dev/nvidia-uvm exists
	GPUs    []string // the /dev/nvidiaN nodes, sorted
}

// ReadNVModule reads the state under the roots Dev and Proc.
func ReadNVModule() NVModule {
	dev := Dev()
	var s NVModule
	s.Loaded, s.Module = versionLine(filepath.Join(Proc(), "driver/nvidia/version"))
	s.Control = exists(filepath.Join(dev, "nvidiactl"))
	s.UVM = exists(filepath.Join(dev, "nvidia-uvm"))
	matches, _ := filepath.Glob(filepath.Join(dev, "nvidia[0-9]*"))
	for _, m := range matches {
		if isNVIDIANode(filepath.Base(m)) {
			s.GPUs = append(s.GPUs, m)
		}
	}
	slices.Sort(s.GPUs)
	return s
}

// isNVIDIANode says whether name is a GPU's device node, nvidia and its
// index (nvidia0), not nvidiactl or nvidia-uvm.
func isNVIDIANode(name string) bool {
	index, ok := strings.CutPrefix(name, "nvidia")
	return ok && index != "" && strings.Trim(index, "0123456789") == ""
}

// maxVersionLine bounds the module's version line that ReadNVModule keeps.
const maxVersionLine = 4096

// Present reports whether this process is given an NVIDIA GPU: a GPU device
// node (/dev/nvidiaN) exists. The loaded module alone is not one: a container
// given no GPU sees the host's /proc/driver/nvidia/version but no node, and no
// wait changes that. evidence says what was seen, either way, for a message.
func (s NVModule) Present() (present bool, evidence string) {
	switch {
	case len(s.GPUs) > 0:
		return true, strings.Join(s.GPUs, ", ") + " exist"
	case s.Loaded:
		return false, "no /dev/nvidiaN device node, though the NVIDIA kernel module is loaded: this process was given no GPU"
	}
	return false, "no /dev/nvidiaN device node and no NVIDIA kernel module"
}

// Problem says what the kernel side lacks for a process to use a GPU, or ""
// when nothing is missing that can be seen from here.
func (s NVModule) Problem() string {
	switch {
	case !s.Loaded && !s.Control && len(s.GPUs) == 0:
		return "the NVIDIA kernel module is not loaded (there is no /proc/driver/nvidia/version nor /dev/nvidiactl): install the driver's kernel module, or modprobe nvidia; in a container, run with --gpus all and the NVIDIA container toolkit"
	case !s.Control:
		return "there is no /dev/nvidiactl: in a container, run with --gpus all and the NVIDIA container toolkit, which passes the device nodes in"
	case len(s.GPUs) == 0:
		return "/dev/nvidiactl exists but no /dev/nvidiaN does: the driver found no GPU, or the container was given none (--gpus, NVIDIA_VISIBLE_DEVICES)"
	case !s.UVM:
		return "there is no /dev/nvidia-uvm: CUDA needs the nvidia_uvm module (modprobe nvidia_uvm, or nvidia-modprobe -u -c=0)"
	}
	return ""
}

// versionLine reads the version file at path: whether it is there, and its
// first line (see parseVersion).
func versionLine(path string) (loaded bool, line string) {
	f, err := os.Open(path)
	if err != nil {
		return false, ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, maxVersionLine))
	return true, parseVersion(b)
}

// parseVersion is the module's version line in the start of the version
// file's text: its first line, blanks trimmed ("NVRM version: NVIDIA UNIX
// x86_64 Kernel Module  535.261.03  …"), at most maxVersionLine bytes.
func parseVersion(text []byte) string {
	if len(text) > maxVersionLine {
		text = text[:maxVersionLine]
	}
	if end := bytes.IndexAny(text, "\r\n"); end >= 0 {
		text = text[:end]
	}
	return strings.TrimSpace(string(text))
}
