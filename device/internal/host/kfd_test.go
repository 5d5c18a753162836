package host

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeNode writes one KFD node's properties under root.
func writeNode(t *testing.T, root string, index int, props string) {
	t.Helper()
	dir := filepath.Join(root, "class/kfd/kfd/topology/nodes", strconv.Itoa(index))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "properties"), []byte(props), 0o644))
}

func TestNodesAreGPUsMatchedByPCIBusID(t *testing.T) {
	root := t.TempDir()
	writeNode(t, root, 0, "cpu_cores_count 64\nsimd_count 0\ngfx_target_version 0\n") // the CPU
	writeNode(t, root, 1, "cpu_cores_count 0\nsimd_count 440\nsimd_per_cu 4\ngfx_target_version 90010\nlocation_id 49408\ndomain 0\nunique_id 17217756948692853760\n")
	writeNode(t, root, 2, "cpu_cores_count 8\nsimd_count 48\nsimd_per_cu 4\ngfx_target_version 110003\nlocation_id 768\ndomain 1\nunique_id 0\n")
	nodes, err := KFDNodes(root)
	require.NoError(t, err)
	require.Len(t, nodes, 2, "the CPU node is left out")
	mi, ok := FindKFDNode(nodes, "0000:C1:00.0")
	require.True(t, ok, "bus ids match in any case")
	assert.Equal(t, KFDNode{PCIBusID: "0000:c1:00.0", GfxTarget: 90010, UniqueID: 17217756948692853760, ComputeUnits: 110}, mi)
	apu, ok := FindKFDNode(nodes, "0001:03:00.0")
	require.True(t, ok)
	assert.True(t, apu.Integrated)
	_, ok = FindKFDNode(nodes, "0000:99:00.0")
	assert.False(t, ok)
	_, err = KFDNodes(t.TempDir())
	assert.True(t, errors.Is(err, os.ErrNotExist))
}

func TestArchAndOverride(t *testing.T) {
	for version, want := range map[int]string{90010: "gfx90a", 100300: "gfx1030", 90402: "gfx942", 110000: "gfx1100", 90008: "gfx908"} {
		assert.Equal(t, want, GfxArch(version))
	}
	t.Setenv(EnvGfxOverride, "10.3.0")
	v, ok, err := GfxOverride()
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "gfx1030", GfxArch(v))
	for _, bad := range []string{"10.3", "ten.3.0", "9.0.100"} {
		t.Setenv(EnvGfxOverride, bad)
		_, _, err := GfxOverride()
		assert.Error(t, err, bad)
	}
	t.Setenv(EnvGfxOverride, "")
	_, ok, err = GfxOverride()
	assert.False(t, ok)
	assert.NoError(t, err)
}

func TestUUIDIsRocmSmis(t *testing.T) {
	assert.Equal(t, "GPU-eef1c2b8a3d9e400", AMDUUID(17217756948692853760))
	assert.Equal(t, "GPU-00000000000000ff", AMDUUID(255))
	assert.Empty(t, AMDUUID(0))
}

func TestVRAM(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "bus/pci/devices/0000:c1:00.0")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mem_info_vram_total"), []byte("68702699520\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mem_info_vram_used"), []byte("1073741824\n"), 0o644))
	total, used, err := VRAM(root, "0000:C1:00.0")
	require.NoError(t, err)
	assert.Equal(t, uint64(68702699520), total)
	assert.Equal(t, uint64(1073741824), used)
	_, _, err = VRAM(root, "0000:03:00.0")
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestKFDProblems(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{fs.ErrNotExist, "there is no /dev/kfd: amdgpu is not loaded"},
		{fs.ErrPermission, "add the user to the render and video groups"},
	} {
		got := problemAt("/dev/kfd", func(string) error { return tc.err })
		if tc.want == "" {
			assert.Empty(t, got)
		} else {
			assert.Contains(t, got, tc.want)
		}
	}
}

func TestOnlyDevKFDMeansAGPUWasGiven(t *testing.T) {
	for _, tc := range []struct {
		name             string
		kfdNode, sysfs   bool
		present          bool
		evidenceContains string
	}{
		{"a CPU-only host", false, false, false, "no KFD topology"},
		{"a pod given no GPU on an AMD node: the host's topology, no /dev/kfd", false, true, false, "this process was given none"},
		{"/dev/kfd given", true, true, true, "kfd exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev, sys := t.TempDir(), t.TempDir()
			t.Setenv(EnvDevRoot, dev)
			t.Setenv(EnvSysfsRoot, sys)
			if tc.kfdNode {
				require.NoError(t, os.WriteFile(filepath.Join(dev, "kfd"), nil, 0o644))
			}
			if tc.sysfs {
				writeNode(t, sys, 1, "cpu_cores_count 0\nsimd_count 440\nsimd_per_cu 4\ngfx_target_version 90010\nlocation_id 49408\ndomain 0\n")
			}
			present, evidence := KFDPresent()
			assert.Equal(t, tc.present, present)
			assert.Contains(t, evidence, tc.evidenceContains)
		})
	}
}

// FuzzNodes checks KFDNodes on any properties file of a GPU node: it reads the
// same every time, each node it returns is a GPU with a gfx target and a
// lower-case PCI bus id that FindKFDNode finds in any case, and an error names the
// file.
func FuzzNodes(f *testing.F) {
	f.Add("cpu_cores_count 0\nsimd_count 440\nsimd_per_cu 4\ngfx_target_version 90010\nlocation_id 49408\ndomain 0\nunique_id 17217756948692853760\n")
	f.Add("cpu_cores_count 8\nsimd_count 48\nsimd_per_cu 4\ngfx_target_version 110003\nlocation_id 768\ndomain 1\n")
	f.Add("gfx_target_version 0\n")
	f.Add("  gfx_target_version   90402 \r\nsimd_per_cu 0\nsimd_count 12")
	f.Fuzz(func(t *testing.T, props string) {
		root := t.TempDir()
		writeNode(t, root, 1, props)
		nodes, err := KFDNodes(root)
		again, err2 := KFDNodes(root)
		if !reflect.DeepEqual(nodes, again) || (err == nil) != (err2 == nil) {
			t.Fatalf("two reads differ: %v, %v; %v, %v", nodes, err, again, err2)
		}
		if err != nil {
			if !strings.Contains(err.Error(), filepath.Join(root, "class/kfd/kfd/topology/nodes/1/properties")) {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		for _, n := range nodes {
			if n.GfxTarget <= 0 || n.ComputeUnits < 0 || n.PCIBusID != strings.ToLower(n.PCIBusID) {
				t.Fatalf("%q reads as %+v", props, n)
			}
			if found, ok := FindKFDNode(nodes, strings.ToUpper(n.PCIBusID)); !ok || !reflect.DeepEqual(found, n) {
				t.Fatalf("FindKFDNode misses %+v", n)
			}
		}
	})
}
