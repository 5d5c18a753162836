//go:build linux && cgo && !nocuda && !cudalink

package cuda

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/internal/host"
	"github.com/gpuinit/gpuinit/device/internal/loader"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
)

// The benchmarks run over the fake drivers, in this process (the tests load
// drivers only in children), so each measures what gpuinit adds to the
// driver's own calls. Reproduce with:
//
//	go test -run '^$' -bench . -benchmem ./device/cuda

var benchLoaded bool

// loadFakes points the backend at the fake libcuda, NVML and libcurand, and
// initializes. The fake host has one device of each memory source: 0 is a
// whole H200 (NVML), 1 and 2 are MIG instances of an A100 (NVML, through the
// instance's own handle), 3 is a GB10-like integrated GPU (/proc/meminfo).
func loadFakes(b *testing.B) {
	b.Helper()
	if !benchLoaded {
		os.Setenv("GPUINIT_FAKE_CUDA_MIG", "1,2")
		os.Setenv("GPUINIT_FAKE_CUDA_DEVICES", "4")
		os.Setenv(EnvLibrary, fakedriver.Build(b, fakedriver.CUDA))
		os.Setenv(EnvNVMLLibrary, fakedriver.Build(b, fakedriver.NVML))
		os.Setenv(EnvCurandLibrary, fakedriver.Build(b, fakedriver.CURAND))
		if err := process.Init(context.Background()); err != nil {
			b.Fatal(err)
		}
		// Load NVML and libcurand now, while b's files exist: a loaded
		// library stays.
		if _, _, err := process.MemoryInfo(0); err != nil {
			b.Fatal(err)
		}
		g, err := process.NewGenerator(0)
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Close(); err != nil {
			b.Fatal(err)
		}
		benchLoaded = true
	}
}

// BenchmarkLoad compares dlopen of the (already loaded) driver alone with
// dlopen and resolving every symbol into the table.
func BenchmarkLoad(b *testing.B) {
	loadFakes(b)
	b.Run("dlopen", func(b *testing.B) {
		for b.Loop() {
			if _, err := loader.Load(driverLibrary()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("dlopen+resolve-all-symbols", func(b *testing.B) {
		for b.Loop() {
			if _, err := loadDriver(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkInit compares the driver calls initialization makes, made raw
// through the table, with the backend's own initialization and device
// descriptions, which make the same calls and also load the library (dlopen,
// and resolving every symbol).
func BenchmarkInit(b *testing.B) {
	loadFakes(b)
	b.Run("raw-driver-calls", func(b *testing.B) {
		attrs := []int{attrComputeCapabilityMajor, attrComputeCapabilityMinor, attrMultiprocessorCount,
			attrIntegrated, attrPCIBusID, attrPCIDeviceID, attrPCIDomainID}
		for b.Loop() {
			api.driverGetVersion()
			api.init()
			n, _ := api.deviceGetCount()
			for i := range n {
				dev, _ := api.deviceGet(i)
				api.deviceGetName(dev)
				api.deviceTotalMem(dev)
				for _, a := range attrs {
					api.deviceGetAttribute(a, dev)
				}
				deviceUUID(dev)
				deviceUUIDv1(dev)
			}
		}
	})
	b.Run("backend", func(b *testing.B) {
		for b.Loop() {
			if err := initialize(); err != nil {
				b.Fatal(err)
			}
			n, _ := process.Count()
			for i := range n {
				if _, err := describe(i); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkMemoryInfo compares MemoryInfo with the read it makes, alone, side
// by side in one run, for each source: NVML for a whole GPU and for a MIG
// instance (through its MIG device handle), /proc/meminfo for an integrated
// GPU.
//
//	go test -run '^$' -bench 'MemoryInfo' -benchmem -count 3 ./device/cuda/
func BenchmarkMemoryInfo(b *testing.B) {
	loadFakes(b)
	handles, err := loadNVML()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		read, memoryInfo string // the sub-benchmarks' names
		ordinal          int
		mig, integrated  bool
		call             func() error
	}{
		{"nvml-call", "MemoryInfo", 0, false, false, func() error { _, _, err := nvmlMemory(handles, 0); return err }},
		{"nvml-call-MIG", "MemoryInfo-MIG", 1, true, false, func() error { _, _, err := nvmlMemory(handles, 1); return err }},
		{"meminfo-read", "MemoryInfo-integrated", 3, false, true, func() error { _, _, err := host.ReadMemory(); return err }},
	} {
		if info, err := describe(c.ordinal); err != nil || (info.MIG != nil) != c.mig || info.Integrated != c.integrated {
			b.Fatalf("device %d is not the fake's %s device: %+v, %v", c.ordinal, c.memoryInfo, info, err)
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

// BenchmarkDo measures Do with an empty fn, from every P at once: finding the
// device's primary context, locking the thread, and swapping the context in
// and out.
func BenchmarkDo(b *testing.B) {
	loadFakes(b)
	noop := func() error { return nil }
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := process.Do(0, noop); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGenerate measures a 16-value draw on a device generator: the
// fake's curandGenerate is cheap, so this is what gpuinit adds around it.
func BenchmarkGenerate(b *testing.B) {
	loadFakes(b)
	g, err := process.NewGenerator(0)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	dst := make([]uint32, 16)
	b.ReportAllocs()
	for b.Loop() {
		if err := g.Generate(dst); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWatchedCalls measures what the call deadline's watch adds to the
// Runtime's hot paths, side by side in one run: Do with an empty fn from
// every P, and a 16-value draw on a Runtime's generator, with the watch on
// (the default deadline) and off.
//
//	go test -run '^$' -bench WatchedCalls -count 5 ./device/cuda
func BenchmarkWatchedCalls(b *testing.B) {
	loadFakes(b)
	ctx := context.Background()
	noop := func() error { return nil }
	for _, c := range []struct {
		name     string
		deadline time.Duration
	}{{"watch=off", -1}, {"watch=on", device.DefaultCallDeadline}} {
		r := device.New(process)
		r.SetCallDeadline(c.deadline)
		if err := r.Init(ctx); err != nil {
			b.Fatal(err)
		}
		b.Run("Do/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := r.Do(ctx, 0, noop); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		g, err := r.NewGenerator(ctx, 0)
		if err != nil {
			b.Fatal(err)
		}
		dst := make([]uint32, 16)
		b.Run("Generate/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := g.Generate(dst); err != nil {
					b.Fatal(err)
				}
			}
		})
		if err := errors.Join(g.Close(), r.Shutdown(context.Background())); err != nil {
			b.Fatal(err)
		}
	}
}
