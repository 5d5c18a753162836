//go:build linux && cgo && !nohip

package hip

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/host"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envOf is name's value in env.
func envOf(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// libhsakmtHost completes fakeHost's tree as libhsakmt reads it: gpu_id
// files (0 for the CPU node), render minors and their /dev/dri nodes, so that
// node ids are 0 (CPU), 1 (the hidden gfx90a), 2 (the W7900, device 1) and 3
// (the MI250X, device 0). With apu, the W7900's node also has CPU cores (an
// APU), with GTT counters of 32 GiB, 2 GiB used.
func libhsakmtHost(t *testing.T, apu bool, env ...string) []string {
	t.Helper()
	base, _ := fakeHost(t, fakedriver.HIP)
	sys, dev := envOf(base, host.EnvSysfsRoot), envOf(base, host.EnvDevRoot)
	require.NoError(t, os.MkdirAll(filepath.Join(dev, "dri"), 0o755))
	for node := range 4 {
		dir := filepath.Join(sys, "class/kfd/kfd/topology/nodes", fmt.Sprint(node))
		gpuID := "0"
		if node > 0 {
			gpuID = fmt.Sprint(1000 + node)
			props, err := os.ReadFile(filepath.Join(dir, "properties"))
			require.NoError(t, err)
			props = fmt.Appendf(props, "drm_render_minor %d\n", 127+node)
			if apu && node == 2 {
				props = []byte(strings.Replace(string(props), "cpu_cores_count 0", "cpu_cores_count 16", 1))
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, "properties"), props, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dev, "dri", fmt.Sprintf("renderD%d", 127+node)), nil, 0o666))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "gpu_id"), []byte(gpuID+"\n"), 0o644))
	}
	pci := filepath.Join(sys, "bus/pci/devices/0000:03:00.0")
	require.NoError(t, os.WriteFile(filepath.Join(pci, "mem_info_gtt_total"), []byte("34359738368\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(pci, "mem_info_gtt_used"), []byte("2147483648\n"), 0o644))
	return append(base, env...)
}

// meminfo is a /proc with available kB of MemAvailable.
func meminfo(t *testing.T, availableKB uint64) string {
	proc := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(proc, "meminfo"),
		fmt.Appendf(nil, "MemTotal: 67108864 kB\nMemFree: 1024 kB\nMemAvailable: %d kB\n", availableKB), 0o644))
	return host.EnvProcRoot + "=" + proc
}

func TestTargetsAndMemorySources(t *testing.T) {
	for _, tc := range []struct {
		name string
		apu  bool
		env  []string
	}{
		{"the per-device override for its libhsakmt node, the global one for the others, a warning across ISA families", false,
			[]string{"HSA_OVERRIDE_GFX_VERSION=11.0.0", "HSA_OVERRIDE_GFX_VERSION_2=11.0.1", "WANT=targets"}},
		{"a malformed per-device override fails Init, naming it", false, []string{"HSA_OVERRIDE_GFX_VERSION_3=10.3", "WANT=malformed"}},
		{"a discrete GPU's VRAM, an APU's GTT", true, []string{meminfo(t, 64<<20), "WANT=gtt"}},
		{"an APU whose host has less available than GTT: the host's figure binds", true, []string{meminfo(t, 8<<20), "WANT=host"}},
	} {
		t.Run(tc.name, func(t *testing.T) { runChild(t, "TestChildTargetsAndMemory", libhsakmtHost(t, tc.apu, tc.env...)...) })
	}
}

func TestChildTargetsAndMemory(t *testing.T) {
	child(t)
	r := device.New(process)
	ctx := context.Background()
	err := r.Init(ctx)
	switch os.Getenv("WANT") {
	case "malformed":
		require.ErrorIs(t, err, device.ErrDriverMismatch)
		assert.ErrorContains(t, err, `HSA_OVERRIDE_GFX_VERSION_3="10.3"`)
		return
	case "targets":
		require.NoError(t, err)
		d0, err := r.Device(ctx, 0)
		require.NoError(t, err)
		assert.Equal(t, "gfx1100", d0.Arch)
		assert.Equal(t, "gfx90a", d0.NativeArch)
		assert.Equal(t, "HSA_OVERRIDE_GFX_VERSION", d0.ArchSource)
		assert.Contains(t, d0.ArchWarning, "gfx90a")
		d1, err := r.Device(ctx, 1)
		require.NoError(t, err)
		assert.Equal(t, "gfx1101", d1.Arch, "HSA_OVERRIDE_GFX_VERSION_2: node 2 is the W7900 (node 0 is the CPU)")
		assert.Equal(t, "gfx1100", d1.NativeArch)
		assert.Equal(t, "HSA_OVERRIDE_GFX_VERSION_2", d1.ArchSource)
		assert.Empty(t, d1.ArchWarning, "gfx1100 as gfx1101: the same ISA family")
		return
	}
	require.NoError(t, err)
	m, err := r.Memory(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, driver.Memory{Free: 68702699520 - 4294967296, Total: 68702699520, Source: driver.MemoryAMDVRAM}, m)
	info, err := r.Device(ctx, 1)
	require.NoError(t, err)
	assert.True(t, info.Integrated, "its KFD node has CPU cores")
	m, err = r.Memory(ctx, 1)
	require.NoError(t, err)
	if os.Getenv("WANT") == "gtt" {
		assert.Equal(t, driver.Memory{Free: 30 << 30, Total: 34359738368, Source: driver.MemoryAMDGTT}, m, "GTT total less used")
	} else {
		assert.Equal(t, driver.Memory{Free: 8 << 30, Total: 67108864 << 10, Source: driver.MemoryHost}, m,
			"MemAvailable binds: both figures the host's (MemTotal), not GTT's total beside the host's free")
	}
	if !raceEnabled {
		childtest.Until(t, "the health watch settles", func() (bool, <-chan struct{}) { s := r.Stats(); return s.HealthSettled(), s.Changed() })
		assert.Zero(t, childtest.AllocsPerRun(100, func() { _, _ = r.Memory(ctx, 1) }), "an APU's read allocates nothing")
	}
}
