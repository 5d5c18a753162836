package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// env is a fake environment for EffectiveGfxTarget.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func TestEnvOverrideNodeAppendsTheNodeID(t *testing.T) {
	assert.Equal(t, "HSA_OVERRIDE_GFX_VERSION_1", EnvGfxOverrideNode(1))
	assert.Equal(t, "HSA_OVERRIDE_GFX_VERSION_12", EnvGfxOverrideNode(12))
}

func TestEffectiveTargetFollowsLibhsakmt(t *testing.T) {
	const native, node = 100302, 1 // gfx1032 on node 1
	for _, tc := range []struct {
		name      string
		vars      map[string]string
		effective int
		source    string
		err       string // substring; "" for none
	}{
		{"nothing set: the native target", nil, native, "", ""},
		{"the global override applies to every GPU", map[string]string{"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}, 100300, "HSA_OVERRIDE_GFX_VERSION", ""},
		{"the node's own override wins over the global one",
			map[string]string{"HSA_OVERRIDE_GFX_VERSION": "11.0.0", "HSA_OVERRIDE_GFX_VERSION_1": "10.3.0"}, 100300, "HSA_OVERRIDE_GFX_VERSION_1", ""},
		{"another node's override does not apply", map[string]string{"HSA_OVERRIDE_GFX_VERSION_2": "10.3.0"}, native, "", ""},
		{"a 0.0.0 node override exempts the node from the global one",
			map[string]string{"HSA_OVERRIDE_GFX_VERSION": "11.0.0", "HSA_OVERRIDE_GFX_VERSION_1": "0.0.0"}, native, "HSA_OVERRIDE_GFX_VERSION_1", ""},
		{"stepping 10 is gfx90a", map[string]string{"HSA_OVERRIDE_GFX_VERSION": "9.0.10"}, 90010, "HSA_OVERRIDE_GFX_VERSION", ""},
		{"leading white space is skipped, as %u does", map[string]string{"HSA_OVERRIDE_GFX_VERSION": " 10.3.0"}, 100300, "HSA_OVERRIDE_GFX_VERSION", ""},
		{"white space after a dot is skipped, as %u does", map[string]string{"HSA_OVERRIDE_GFX_VERSION": "10. 3.0"}, 100300, "HSA_OVERRIDE_GFX_VERSION", ""},
		{"a plus sign is taken, as %u does", map[string]string{"HSA_OVERRIDE_GFX_VERSION": "+11.0.2"}, 110002, "HSA_OVERRIDE_GFX_VERSION", ""},
		{"a node override set empty hides the global one and is malformed",
			map[string]string{"HSA_OVERRIDE_GFX_VERSION": "10.3.0", "HSA_OVERRIDE_GFX_VERSION_1": ""}, 0, "HSA_OVERRIDE_GFX_VERSION_1", `HSA_OVERRIDE_GFX_VERSION_1="": libhsakmt wants`},
		{"an empty global override is malformed", map[string]string{"HSA_OVERRIDE_GFX_VERSION": ""}, 0, "HSA_OVERRIDE_GFX_VERSION", `HSA_OVERRIDE_GFX_VERSION="": libhsakmt wants`},
		{"two numbers are malformed", map[string]string{"HSA_OVERRIDE_GFX_VERSION": "10.3"}, 0, "HSA_OVERRIDE_GFX_VERSION", `HSA_OVERRIDE_GFX_VERSION="10.3"`},
		{"four numbers are malformed", map[string]string{"HSA_OVERRIDE_GFX_VERSION": "10.3.0.1"}, 0, "HSA_OVERRIDE_GFX_VERSION", `"10.3.0.1"`},
		{"trailing white space is malformed (%c reads it)", map[string]string{"HSA_OVERRIDE_GFX_VERSION": "10.3.0 "}, 0, "HSA_OVERRIDE_GFX_VERSION", `"10.3.0 "`},
		{"a gfx name is malformed", map[string]string{"HSA_OVERRIDE_GFX_VERSION_1": "gfx1030"}, 0, "HSA_OVERRIDE_GFX_VERSION_1", `HSA_OVERRIDE_GFX_VERSION_1="gfx1030"`},
		{"a hex stepping is malformed", map[string]string{"HSA_OVERRIDE_GFX_VERSION": "9.0.a"}, 0, "HSA_OVERRIDE_GFX_VERSION", `"9.0.a"`},
		{"major over 63 is malformed", map[string]string{"HSA_OVERRIDE_GFX_VERSION": "64.0.0"}, 0, "HSA_OVERRIDE_GFX_VERSION", `"64.0.0"`},
		{"stepping over 255 is malformed", map[string]string{"HSA_OVERRIDE_GFX_VERSION": "9.0.256"}, 0, "HSA_OVERRIDE_GFX_VERSION", `"9.0.256"`},
		{"a negative number is malformed", map[string]string{"HSA_OVERRIDE_GFX_VERSION": "-1.0.0"}, 0, "HSA_OVERRIDE_GFX_VERSION", `"-1.0.0"`},
		{"stepping over 99 names no target", map[string]string{"HSA_OVERRIDE_GFX_VERSION": "9.0.100"}, 0, "HSA_OVERRIDE_GFX_VERSION", "9.0.100 names no gfx target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			effective, source, err := EffectiveGfxTarget(native, node, env(tc.vars))
			assert.Equal(t, tc.source, source, "source")
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.effective, effective)
		})
	}
}

// gpuNode writes a KFD node with a gpu_id under root: a CPU when gpuID is 0,
// else a GPU at bus 0000:<bus>:00.0 with the given render minor (0: none).
func gpuNode(t *testing.T, root string, index int, gpuID uint32, bus, minor int) {
	t.Helper()
	props := "cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\n"
	if gpuID != 0 {
		props = "cpu_cores_count 0\nsimd_count 240\nsimd_per_cu 4\ngfx_target_version 110000\ndomain 0\n" +
			"location_id " + strconv.Itoa(bus<<8) + "\n"
		if minor != 0 {
			props += "drm_render_minor " + strconv.Itoa(minor) + "\n"
		}
	}
	writeNode(t, root, index, props)
	dir := filepath.Join(root, "class/kfd/kfd/topology/nodes", strconv.Itoa(index))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gpu_id"), []byte(strconv.FormatUint(uint64(gpuID), 10)+"\n"), 0o644))
}

// renderNodes creates /dev/dri/renderD<minor> under dev for each minor.
func renderNodes(t *testing.T, dev string, minors ...int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dev, "dri"), 0o755))
	for _, m := range minors {
		require.NoError(t, os.WriteFile(filepath.Join(dev, "dri", "renderD"+strconv.Itoa(m)), nil, 0o644))
	}
}

func TestNodeIDsNumberTheNodesLibhsakmtCanUse(t *testing.T) {
	// A host with a CPU node and three GPUs at buses 03, 43 and 83 on nodes 1-3.
	host := func(t *testing.T, root string) {
		gpuNode(t, root, 0, 0, 0, 0)
		gpuNode(t, root, 1, 1111, 0x03, 128)
		gpuNode(t, root, 2, 2222, 0x43, 129)
		gpuNode(t, root, 3, 3333, 0x83, 130)
	}
	errOn := func(suffix string, err error) func(string) ([]byte, error) {
		return func(path string) ([]byte, error) {
			if strings.HasSuffix(path, suffix) {
				return nil, &os.PathError{Op: "read", Path: path, Err: err}
			}
			return os.ReadFile(path)
		}
	}
	for _, tc := range []struct {
		name     string
		setup    func(t *testing.T, root, dev string)
		readFile func(string) ([]byte, error)
		open     func(string) error
		want     map[string]int
		err      string
	}{
		{"the CPU node counts, so the first GPU is node 1",
			func(t *testing.T, root, dev string) { host(t, root); renderNodes(t, dev, 128, 129, 130) },
			nil, nil, map[string]int{"0000:03:00.0": 1, "0000:43:00.0": 2, "0000:83:00.0": 3}, ""},
		{"a render node not given to the container skips its GPU and shifts the next",
			func(t *testing.T, root, dev string) { host(t, root); renderNodes(t, dev, 129, 130) },
			nil, nil, map[string]int{"0000:43:00.0": 1, "0000:83:00.0": 2}, ""},
		{"a GPU the device cgroup hides (EPERM on gpu_id) is skipped",
			func(t *testing.T, root, dev string) { host(t, root); renderNodes(t, dev, 128, 129, 130) },
			errOn("nodes/2/gpu_id", syscall.EPERM), nil, map[string]int{"0000:03:00.0": 1, "0000:83:00.0": 2}, ""},
		{"a render node that answers EPERM is skipped",
			func(t *testing.T, root, dev string) { host(t, root); renderNodes(t, dev, 128, 129, 130) },
			nil, func(path string) error {
				if strings.HasSuffix(path, "renderD128") {
					return &os.PathError{Op: "open", Path: path, Err: syscall.EPERM}
				}
				return nil
			}, map[string]int{"0000:43:00.0": 1, "0000:83:00.0": 2}, ""},
		{"a render node this user may not open fails the topology, as in libhsakmt",
			func(t *testing.T, root, dev string) { host(t, root); renderNodes(t, dev, 128, 129, 130) },
			nil, func(path string) error {
				return &os.PathError{Op: "open", Path: path, Err: syscall.EACCES}
			}, nil, "renderD128, which libhsakmt must"},
		{"a GPU without drm_render_minor fails the topology",
			func(t *testing.T, root, dev string) { gpuNode(t, root, 0, 0, 0, 0); gpuNode(t, root, 1, 1111, 0x03, 0) },
			nil, nil, nil, "node 1: drm_render_minor 0"},
		{"a gpu_id that cannot be read for another reason fails the topology",
			func(t *testing.T, root, dev string) { host(t, root); renderNodes(t, dev, 128, 129, 130) },
			errOn("nodes/3/gpu_id", syscall.EIO), nil, nil, "node 3"},
		{"a missing node directory fails the topology",
			func(t *testing.T, root, dev string) {
				host(t, root)
				renderNodes(t, dev, 128, 129, 130)
				require.NoError(t, os.MkdirAll(filepath.Join(root, "class/kfd/kfd/topology/nodes/7"), 0o755))
			}, nil, nil, nil, "node 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, dev := t.TempDir(), t.TempDir()
			tc.setup(t, root, dev)
			readFile, open := tc.readFile, tc.open
			if readFile == nil {
				readFile = os.ReadFile
			}
			if open == nil {
				open = openRenderNode
			}
			got, err := nodeIDs(root, dev, readFile, open)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestNodeIDsWithoutTopologyIsNotExist(t *testing.T) {
	_, err := KFDNodeIDs(t.TempDir(), t.TempDir())
	assert.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
}

// FuzzEffectiveTarget checks HSA_OVERRIDE_GFX_VERSION's reading on any
// value: an error names the variable, and a value read is a gfx target
// version whose major.minor.stepping reads back as the same.
func FuzzEffectiveTarget(f *testing.F) {
	for _, s := range []string{"10.3.0", "11.0.0", "9.4.2", "0.0.0", "10.3", "10.3.0x", " 10.3.0", "+9.-0.10", "99.99.99", "63.255.255"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		const native = 100302
		got, source, err := EffectiveGfxTarget(native, 1, env(map[string]string{EnvGfxOverride: value}))
		if err != nil {
			if source != EnvGfxOverride || !strings.Contains(err.Error(), EnvGfxOverride) {
				t.Fatalf("%q: %v names %q", value, err, source)
			}
			return
		}
		if got <= 0 || source != EnvGfxOverride {
			t.Fatalf("%q reads as %d from %q", value, got, source)
		}
		again, _, err := EffectiveGfxTarget(native, 1, env(map[string]string{EnvGfxOverride: fmt.Sprintf("%d.%d.%d", got/10000, got/100%100, got%100)}))
		if err != nil || again != got {
			t.Fatalf("%q reads as %d, which reads back as %d (%v)", value, got, again, err)
		}
	})
}
