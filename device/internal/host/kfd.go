package host

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// EnvGfxOverride is ROCm's own variable that makes HIP treat every GPU as another
// gfx target, such as "10.3.0" for gfx1030.
const EnvGfxOverride = "HSA_OVERRIDE_GFX_VERSION"

// KFDNode is one GPU node of the KFD topology.
type KFDNode struct {
	PCIBusID     string // dddd:bb:dd.f, lower case
	GfxTarget    int    // gfx_target_version: 90010 for gfx90a
	UniqueID     uint64 // 0 where the GPU has none
	ComputeUnits int
	Integrated   bool // an APU: its node also has CPU cores
}

// KFDNodes reads the GPU nodes of the KFD topology under root. CPU-only nodes
// (gfx_target_version 0) are left out. A missing topology is an error
// wrapping os.ErrNotExist.
func KFDNodes(root string) ([]KFDNode, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "class/kfd/kfd/topology/nodes/*/properties"))
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("kfd: no topology under %s: %w", root, os.ErrNotExist)
	}
	var nodes []KFDNode
	for _, path := range dirs {
		p, err := readProperties(path)
		if err != nil {
			return nil, fmt.Errorf("kfd: %w", err)
		}
		if p["gfx_target_version"] == 0 {
			continue
		}
		// KFD's fields are 32-bit: a larger value is no node's, and would
		// not fit an int on every platform.
		for _, field := range []string{"gfx_target_version", "simd_count"} {
			if p[field] > math.MaxInt32 {
				return nil, fmt.Errorf("kfd: %s: %s %d is past what KFD writes", path, field, p[field])
			}
		}
		loc := p["location_id"]
		n := KFDNode{
			PCIBusID:   fmt.Sprintf("%04x:%02x:%02x.%x", p["domain"], loc>>8, (loc>>3)&0x1f, loc&7),
			GfxTarget:  int(p["gfx_target_version"]),
			UniqueID:   p["unique_id"],
			Integrated: p["cpu_cores_count"] > 0,
		}
		if perCU := p["simd_per_cu"]; perCU > 0 {
			n.ComputeUnits = int(p["simd_count"] / perCU)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// readProperties parses a KFD properties file: one "name value" per line,
// values unsigned decimal.
func readProperties(path string) (map[string]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok {
			continue
		}
		if v, err := strconv.ParseUint(strings.TrimSpace(value), 10, 64); err == nil {
			p[name] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return p, nil
}

// FindKFDNode returns the node with the given PCI bus id (any case).
func FindKFDNode(nodes []KFDNode, pciBusID string) (KFDNode, bool) {
	id := strings.ToLower(pciBusID)
	for _, n := range nodes {
		if n.PCIBusID == id {
			return n, true
		}
	}
	return KFDNode{}, false
}

// GfxArch names a gfx target version as ROCm does: 90010 is "gfx90a" (major 9,
// minor 0, stepping 10 in hex), 100300 is "gfx1030", 90402 is "gfx942".
func GfxArch(version int) string {
	major, minor, stepping := version/10000, version/100%100, version%100
	return fmt.Sprintf("gfx%d%d%x", major, minor, stepping)
}

// GfxOverride parses HSA_OVERRIDE_GFX_VERSION ("major.minor.stepping", such as
// "10.3.0") into a gfx target version; ok is false when it is unset, and err
// non-nil when it does not parse.
func GfxOverride() (version int, ok bool, err error) {
	v := strings.TrimSpace(os.Getenv(EnvGfxOverride))
	if v == "" {
		return 0, false, nil
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return 0, false, fmt.Errorf("kfd: %s=%q: want major.minor.stepping, such as 10.3.0", EnvGfxOverride, v)
	}
	var n [3]int
	for i, s := range parts {
		x, err := strconv.Atoi(s)
		if err != nil || x < 0 || (i > 0 && x > 99) {
			return 0, false, fmt.Errorf("kfd: %s=%q: want major.minor.stepping, such as 10.3.0", EnvGfxOverride, v)
		}
		n[i] = x
	}
	return n[0]*10000 + n[1]*100 + n[2], true, nil
}

// AMDUUID spells a unique id as rocm-smi and ROCR_VISIBLE_DEVICES do: "GPU-" and
// 16 hex digits; "" for a GPU without one.
func AMDUUID(uniqueID uint64) string {
	if uniqueID == 0 {
		return ""
	}
	return fmt.Sprintf("GPU-%016x", uniqueID)
}

// VRAM reads a PCI device's VRAM counters from amdgpu's sysfs files: total
// and used bytes. Either file missing is an error wrapping os.ErrNotExist.
func VRAM(root, pciBusID string) (total, used uint64, err error) {
	dir := filepath.Join(root, "bus/pci/devices", strings.ToLower(pciBusID))
	if total, err = readUint(filepath.Join(dir, "mem_info_vram_total")); err != nil {
		return 0, 0, err
	}
	if used, err = readUint(filepath.Join(dir, "mem_info_vram_used")); err != nil {
		return 0, 0, err
	}
	return total, used, nil
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("kfd: %s: %w", path, err)
	}
	return v, nil
}

// KFDProblem says what is wrong with /dev/kfd, the device node every ROCm
// process opens, or "" when it can be opened.
func KFDProblem() string {
	return problemAt(filepath.Join(Dev(), "kfd"), func(path string) error {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err == nil {
			f.Close()
		}
		return err
	})
}

// KFDPresent reports whether this process is given an AMD GPU: /dev/kfd exists.
// The KFD topology in sysfs is not one: a pod on an AMD node that was given no
// GPU sees every GPU of the host there, and no wait changes that. evidence
// says what was seen, either way, for a message.
func KFDPresent() (present bool, evidence string) {
	path := filepath.Join(Dev(), "kfd")
	if exists(path) {
		return true, path + " exists"
	}
	if nodes, err := KFDNodes(Sys()); err == nil && len(nodes) > 0 {
		return false, fmt.Sprintf("no %s, though the KFD topology lists %d GPU(s): this process was given none", path, len(nodes))
	}
	return false, "no " + path + " and no KFD topology"
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// problemAt is KFDProblem for the device node at path, opened with open.
func problemAt(path string, open func(string) error) string {
	err := open(path)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, os.ErrNotExist):
		// The container's flags are in the no-device hint that follows.
		return "there is no " + path + ": amdgpu is not loaded (modprobe amdgpu; check dmesg), or the container lacks the device"
	case errors.Is(err, os.ErrPermission):
		return path + " exists but this user cannot open it: add the user to the render and video groups (in a container, --group-add render --group-add video)"
	}
	return "opening " + path + ": " + err.Error()
}
