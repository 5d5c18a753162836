// Package nvmodule reads what the NVIDIA kernel module publishes without any
// library call: /proc/driver/nvidia/version, which exists only while the
// module is loaded, and the device nodes /dev/nvidiactl, /dev/nvidia-uvm and
// /dev/nvidia0 and on. It tells "no module" from "no device" (libcuda answers
// 100 to both) and "not yet" from "no GPU here" (device nodes without a device
// the driver will give).
package nvmodule

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/gpuinit/gpuinit/device/internal/hostfs"
)

// State is what the kernel side shows.
type State struct {
	Module  string   // the module's version line, "" when /proc/driver/nvidia/version is absent
	Control bool     // /dev/nvidiactl exists
	UVM     bool     // /dev/nvidia-uvm exists
	GPUs    []string // the /dev/nvidiaN nodes, sorted
}

// Read reads the state under hostfs's roots.
func Read() State {
	dev := hostfs.Dev()
	var s State
	s.Module = firstLine(filepath.Join(hostfs.Proc(), "driver/nvidia/version"))
	s.Control = exists(filepath.Join(dev, "nvidiactl"))
	s.UVM = exists(filepath.Join(dev, "nvidia-uvm"))
	matches, _ := filepath.Glob(filepath.Join(dev, "nvidia[0-9]*"))
	for _, m := range matches {
		if gpuNode.MatchString(filepath.Base(m)) {
			s.GPUs = append(s.GPUs, m)
		}
	}
	slices.Sort(s.GPUs)
	return s
}

var gpuNode = regexp.MustCompile(`^nvidia[0-9]+$`)

// maxVersionLine bounds the module's version line that Read keeps.
const maxVersionLine = 4096

// Present reports whether this process is given an NVIDIA GPU: a GPU device
// node (/dev/nvidiaN) exists. The loaded module alone is not one: a container
// given no GPU sees the host's /proc/driver/nvidia/version but no node, and no
// wait changes that. evidence says what was seen, either way, for a message.
func (s State) Present() (present bool, evidence string) {
	switch {
	case len(s.GPUs) > 0:
		return true, strings.Join(s.GPUs, ", ") + " exist"
	case s.Module != "":
		return false, "no /dev/nvidiaN device node, though the NVIDIA kernel module is loaded: this process was given no GPU"
	}
	return false, "no /dev/nvidiaN device node and no NVIDIA kernel module"
}

// Problem says what the kernel side lacks for a process to use a GPU, or ""
// when nothing is missing that can be seen from here.
func (s State) Problem() string {
	switch {
	case s.Module == "" && !s.Control && len(s.GPUs) == 0:
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

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func firstLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if sc.Scan() {
		return strings.TrimSpace(sc.Text())
	}
	return ""
}
