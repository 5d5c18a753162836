//go:build linux && cgo && !nohip

package hip

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuinit/gpuinit/device/internal/host"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
)

// The benchmarks run over the fake libamdhip64 and a fake sysfs, in this
// process (the tests load the runtime only in children), so each measures
// what gpuinit adds to the reads it makes. /proc/meminfo is the host's own.

var benchLoaded bool

// loadFakes points the backend at the fake libamdhip64 and a sysfs tree in
// which device 0 (the MI250X, 0000:c1:00.0) is a discrete GPU with VRAM
// counters and device 1 (0000:03:00.0) an APU (its KFD node has CPU cores)
// with GTT counters, and initializes.
func loadFakes(b *testing.B) {
	b.Helper()
	if benchLoaded {
		return
	}
	sys, dev := b.TempDir(), b.TempDir()
	write := func(path, text string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for i, props := range []string{
		"cpu_cores_count 64\nsimd_count 0\ngfx_target_version 0\n",
		"cpu_cores_count 0\nsimd_count 440\nsimd_per_cu 4\ngfx_target_version 90010\nlocation_id 49408\ndomain 0\n",
		"cpu_cores_count 16\nsimd_count 384\nsimd_per_cu 4\ngfx_target_version 110000\nlocation_id 768\ndomain 0\n",
	} {
		write(filepath.Join(sys, "class/kfd/kfd/topology/nodes", fmt.Sprint(i), "properties"), props)
	}
	pci := filepath.Join(sys, "bus/pci/devices")
	write(filepath.Join(pci, "0000:c1:00.0/mem_info_vram_total"), "68702699520\n")
	write(filepath.Join(pci, "0000:c1:00.0/mem_info_vram_used"), "4294967296\n")
	write(filepath.Join(pci, "0000:03:00.0/mem_info_gtt_total"), "34359738368\n")
	write(filepath.Join(pci, "0000:03:00.0/mem_info_gtt_used"), "2147483648\n")
	write(filepath.Join(dev, "kfd"), "")
	os.Setenv(EnvLibrary, fakedriver.Build(b, fakedriver.HIP))
	os.Setenv(EnvHiprandLibrary, "")
	os.Setenv(host.EnvSysfsRoot, sys)
	os.Setenv(host.EnvDevRoot, dev)
	if err := process.Init(context.Background()); err != nil {
		b.Fatal(err)
	}
	benchLoaded = true
}

// BenchmarkMemoryInfo compares MemoryInfo with the reads it makes, alone,
// side by side in one run: a discrete GPU's two VRAM counters; an APU's two
// GTT counters and /proc/meminfo.
//
//	go test -run '^$' -bench 'MemoryInfo' -benchmem -count 3 ./device/hip/
func BenchmarkMemoryInfo(b *testing.B) {
	loadFakes(b)
	discrete, apu := pathsFor("0000:c1:00.0", false), pathsFor("0000:03:00.0", true)
	counters := func(p memoryPaths) error {
		if _, err := host.ReadCounter(p.total); err != nil {
			return err
		}
		_, err := host.ReadCounter(p.used)
		return err
	}
	for _, c := range []struct {
		read, memoryInfo string // the sub-benchmarks' names
		ordinal          int
		call             func() error
	}{
		{"sysfs-read", "MemoryInfo", 0, func() error { return counters(discrete) }},
		{"sysfs+meminfo-read", "MemoryInfo-APU", 1, func() error {
			if err := counters(apu); err != nil {
				return err
			}
			_, _, err := host.ReadMemory()
			return err
		}},
	} {
		if s, _ := checkOrdinal("MemoryInfo", c.ordinal); s == nil || s.memory[c.ordinal].apu != (c.ordinal == 1) {
			b.Fatalf("device %d is not the fake's %s device", c.ordinal, c.memoryInfo)
		}
		b.Run(c.read, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.call(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.memoryInfo, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := process.MemoryInfo(c.ordinal); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
