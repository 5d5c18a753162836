package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// EnvGfxOverrideNode names the variable that overrides the gfx target of one GPU
// only, HSA_OVERRIDE_GFX_VERSION_<node>, where node is the id libhsakmt gives
// the GPU's KFD node (see KFDNodeIDs). libhsakmt reads it in ROCm 6.3 and later;
// older releases read only HSA_OVERRIDE_GFX_VERSION.
func EnvGfxOverrideNode(node int) string { return EnvGfxOverride + "_" + strconv.Itoa(node) }

// EffectiveGfxTarget applies ROCm's gfx overrides to the GPU whose libhsakmt node
// id is node and whose KFD topology reports the native gfx target version:
// effective is the target ROCm loads code objects for, and source names the
// variable that decided it ("" when neither is set, and effective is native).
// lookup reads the environment, as os.LookupEnv does.
//
// The rules are libhsakmt's (topology_sysfs_get_node_props in
// ROCm/ROCR-Runtime libhsakmt/src/topology.c): HSA_OVERRIDE_GFX_VERSION_<node>
// is looked up first and, when it is set at all (even to ""), it alone counts;
// otherwise HSA_OVERRIDE_GFX_VERSION. The value is what sscanf's
// "%u.%u.%u%c" takes with exactly three conversions: decimal major, minor and
// stepping separated by single dots, with nothing after the stepping, major at
// most 63 and minor and stepping at most 255. ROCR ignores an override of
// 0.0.0 (its OverrideEngineId stays zero), so effective is then native, but
// source still names the variable, which hid HSA_OVERRIDE_GFX_VERSION.
//
// A malformed value is an error naming the variable and its value: libhsakmt
// fails its whole topology then, so ROCm finds no GPU at all. A minor or
// stepping over 99 is an error too, because no gfx target has one and ROCR
// fails to create the agent.
func EffectiveGfxTarget(native, node int, lookup func(string) (string, bool)) (effective int, source string, err error) {
	name := EnvGfxOverrideNode(node)
	value, ok := lookup(name)
	if !ok {
		name = EnvGfxOverride
		if value, ok = lookup(name); !ok {
			return native, "", nil
		}
	}
	v, err := parseOverride(value)
	if err != nil {
		return 0, name, fmt.Errorf("kfd: %s=%q: %w", name, value, err)
	}
	if v == 0 {
		return native, name, nil
	}
	return v, name, nil
}

// errOverrideSyntax is why libhsakmt rejects an override value.
var errOverrideSyntax = errors.New("libhsakmt wants major.minor.stepping in decimal, such as 10.3.0, " +
	"with nothing around it (major at most 63, minor and stepping at most 255), and fails to enumerate any GPU otherwise")

// parseOverride reads an override value as libhsakmt does and encodes it as
// a gfx target version (major*10000 + minor*100 + stepping).
func parseOverride(s string) (int, error) {
	limits := [3]uint64{63, 255, 255}
	var n [3]uint64
	for i := range n {
		if i > 0 {
			if !strings.HasPrefix(s, ".") {
				return 0, errOverrideSyntax
			}
			s = s[1:]
		}
		v, rest, ok := scanUnsigned(s)
		if !ok || v > limits[i] {
			return 0, errOverrideSyntax
		}
		n[i], s = v, rest
	}
	if s != "" { // %c found a fourth item
		return 0, errOverrideSyntax
	}
	if n[1] > 99 || n[2] > 99 {
		return 0, fmt.Errorf("%d.%d.%d names no gfx target: ROCR fails to create the GPU's agent", n[0], n[1], n[2])
	}
	return int(n[0]*10000 + n[1]*100 + n[2]), nil
}

// scanUnsigned is one %u conversion: leading white space, an optional sign,
// then at least one decimal digit. A negative value wraps, as strtoul's does,
// so only -0 survives the caller's limits; ok is false for those that do not.
func scanUnsigned(s string) (v uint64, rest string, ok bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, s, false
	}
	v, err := strconv.ParseUint(s[:i], 10, 32)
	if err != nil || (neg && v != 0) {
		return 0, s, false
	}
	return v, s[i:], true
}

// KFDNodeIDs maps the PCI bus id of each GPU in the KFD topology under root to
// the node id libhsakmt gives it: the n of HSA_OVERRIDE_GFX_VERSION_<n>, and
// the node ROCR's agents are made from. dev is the device root (/dev, or
// Dev()).
//
// libhsakmt (hsakmt_topology_sysfs_get_system_props and
// topology_sysfs_check_node_supported in libhsakmt/src/topology.c) numbers
// the sysfs nodes 0 to N-1 it can use, in sysfs order, N being the number of
// entries in the nodes directory: CPU nodes (gpu_id 0) always, so on a
// typical host the first GPU is node 1, not 0; a GPU node only when its
// gpu_id can be read (KFD answers EPERM for a GPU the device cgroup hides)
// and its render node /dev/dri/renderD<drm_render_minor> opens (a container
// given only some render nodes sees ENOENT for the others). Either way a
// skipped GPU moves the ids of the nodes after it. ROCR_VISIBLE_DEVICES and
// HIP_VISIBLE_DEVICES filter later and do not change these ids.
//
// An error is what makes libhsakmt give up on the whole topology, so that
// ROCm finds no GPU (an unreadable node, a GPU without drm_render_minor, a
// render node it may not open: EACCES, for a user outside the render group),
// or a missing topology (wrapping os.ErrNotExist).
func KFDNodeIDs(root, dev string) (map[string]int, error) {
	return nodeIDs(root, dev, os.ReadFile, openRenderNode)
}

// KFDNodeIDsHost is KFDNodeIDs for this host: Sys() and Dev().
func KFDNodeIDsHost() (map[string]int, error) { return KFDNodeIDs(Sys(), Dev()) }

func openRenderNode(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err == nil {
		f.Close()
	}
	return err
}

// nodeIDs is KFDNodeIDs reading files with readFile and opening render nodes
// with open.
func nodeIDs(root, dev string, readFile func(string) ([]byte, error), open func(string) error) (map[string]int, error) {
	dir := filepath.Join(root, "class/kfd/kfd/topology/nodes")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("kfd: reading the topology: %w", err)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("kfd: no topology nodes in %s: %w", dir, os.ErrNotExist)
	}
	ids := map[string]int{}
	next := 0
	for i := range entries {
		node := filepath.Join(dir, strconv.Itoa(i))
		b, err := readFile(filepath.Join(node, "gpu_id"))
		if errors.Is(err, syscall.EPERM) {
			continue // a GPU the device cgroup hides: libhsakmt skips it
		}
		if err != nil {
			return nil, fmt.Errorf("kfd: node %d: %w", i, err)
		}
		gpuID, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("kfd: node %d: gpu_id %q: %w", i, strings.TrimSpace(string(b)), err)
		}
		if gpuID == 0 { // a CPU node
			next++
			continue
		}
		p, err := readProperties(filepath.Join(node, "properties"))
		if err != nil {
			return nil, fmt.Errorf("kfd: node %d: %w", i, err)
		}
		minor := p["drm_render_minor"]
		if minor < 128 || minor > 255 {
			return nil, fmt.Errorf("kfd: node %d: drm_render_minor %d is no render node, and libhsakmt fails the topology", i, minor)
		}
		render := filepath.Join(dev, "dri", "renderD"+strconv.FormatUint(minor, 10))
		if err := open(render); err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.EPERM) {
				continue // not given to this process: libhsakmt skips it
			}
			return nil, fmt.Errorf("kfd: node %d: opening %s, which libhsakmt must: %w", i, render, err)
		}
		if p["simd_count"] > 0 {
			ids[busID(p)] = next
		}
		next++
	}
	return ids, nil
}

// busID spells a node's PCI bus id as KFDNode.PCIBusID does.
func busID(p map[string]uint64) string {
	loc := p["location_id"]
	return fmt.Sprintf("%04x:%02x:%02x.%x", p["domain"], loc>>8, (loc>>3)&0x1f, loc&7)
}
