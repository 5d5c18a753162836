// Package driver is the interface that gpuinit's GPU backends implement.
//
// It works as database/sql/driver does. Package device is what servers use;
// this package is what a backend (cuda, hip, sim, or one of your own)
// provides to it. A backend registers a Registration with device.Register
// from an init function. The Registration says what device and rng would
// otherwise know by name: whether the backend is a GPU platform, where auto
// tries it, how its generators lay out Philox's stream, its settings, and how
// to classify a raw driver code before the driver is loaded.
//
// Backend is the required interface. The optional capabilities are
// interfaces of their own (RuntimeVersioner, GeneratorBackend, MemoryReader,
// DeviceRunner, CanaryRunner, HealthWatcher, ErrorClassifier), found with
// Capability, so that a wrapper that counts or injects faults keeps them.
// The errors a backend returns are *DriverError values built from a
// CodeTable, whose Is reports one of this package's sentinels.
//
// Package device re-exports the sentinels a server tests for, DriverError
// and Info. A server imports this package too where it reaches past device:
// a Runtime's Backend and Registration, a Memory's Source, the health
// events' kinds, the rarer sentinels (ErrNotReady, ErrInitHung).
//
// Package device/devicetest checks a Backend against this contract.
package driver

import "context"

// Backend is what a GPU platform provides: the driver's own calls, made once.
// device.Runtime adds the laziness, the memoization and the queue on top.
//
// How a Runtime calls a Backend, which is what an implementation may rely on
// and must allow:
//   - Name may be called at any time, from any goroutine; it must not touch
//     the driver.
//   - Init is called once per Runtime, from the Runtime's initialization
//     goroutine. It may load the driver library. ctx carries no cancellation
//     (the initialization outlives any one caller) but keeps the first
//     caller's values. A backend instance shared by several Runtimes sees one
//     Init per Runtime, possibly concurrently: a backend whose driver state
//     is the process's, as cuda's and hip's, memoizes it. A panic in Init is
//     reported by the Runtime as the initialization's error; a backend that
//     memoizes its Init memoizes the panic as that error too, never as
//     success.
//   - Count and Device are called after Init succeeded. The Runtime calls
//     them once each, at initialization, and caches what they return; other
//     callers (devicetest, tools) may call them from many goroutines at
//     once, so they must be safe for concurrent use.
//   - DriverVersion may be called at any time, from any goroutine, before,
//     during and after Init. It must not load or initialize anything: before
//     Init it answers only if the driver can without initializing (sim can;
//     cuda and hip load their library at Init, so they answer only after
//     it), else it returns an error wrapping ErrNotInitialized.
//
// A Backend that wraps another (to count, log or inject faults) implements
// Unwrap() Backend, and Capability finds the optional interfaces it does not
// implement itself in the one it wraps, as http.ResponseController does for a
// ResponseWriter.
type Backend interface {
	// Name is the registered name: "cuda", "hip", "sim".
	Name() string
	// Init is the native initialization, cuInit(0) or hipInit(0). A backend
	// whose driver initialized but reports no device fails with an error
	// wrapping ErrNoDevice.
	Init(ctx context.Context) error
	// DriverVersion reports the driver's version (CUDA: 12020 for 12.2).
	DriverVersion() (int, error)
	// Count reports the number of devices, at least 1 after a successful Init.
	Count() (int, error)
	// Device describes one device, 0 <= ordinal < Count().
	Device(ordinal int) (Info, error)
}

// Info describes one device. It is read once, at initialization. Fields a
// backend cannot know stay zero; each says which backends fill it.
type Info struct {
	Ordinal     int
	Name        string // e.g. "NVIDIA H200"
	Arch        string // e.g. "sm_90", "gfx90a"
	TotalMemory uint64 // bytes

	// UUID is the vendor tool's spelling: nvidia-smi's "GPU-xxxxxxxx-xxxx-…"
	// (or "MIG-…" for a MIG instance) for CUDA, rocm-smi's "GPU-" and the
	// KFD unique_id in hex for HIP; empty where the device has none. It is
	// stable across CUDA_VISIBLE_DEVICES renumbering: match devices by it.
	UUID string
	// PCIBusID is "dddd:bb:dd.f" in lower case; empty where unknown.
	PCIBusID string
	// ComputeMajor and ComputeMinor are CUDA's compute capability (9, 0 for
	// Hopper). HIP leaves them zero: it reports gfx90a as 9.0, which reads
	// as Hopper; use Arch there.
	ComputeMajor, ComputeMinor int
	// Multiprocessors counts SMs (CUDA) or compute units (HIP).
	Multiprocessors int
	// Integrated reports a GPU that shares memory with the host (Jetson,
	// GB10, AMD APUs), from the device's own attribute (CUDA's
	// CU_DEVICE_ATTRIBUTE_INTEGRATED, KFD's node with both CPU cores and
	// SIMDs), never from comparing sizes: its free memory is the host's.
	Integrated bool
	// PageableMemoryAccess reports that the device can access the host's
	// pageable memory coherently (CUDA's attribute 88: GH200, GB10, HMM).
	// It does not make the device's own memory unified.
	PageableMemoryAccess bool
	// MIG describes a MIG instance; nil for a whole GPU.
	MIG *MIG
	// NativeArch is an AMD device's own gfx target where an override
	// (HSA_OVERRIDE_GFX_VERSION, or HSA_OVERRIDE_GFX_VERSION_<node>) made
	// Arch another; ArchSource names the variable, and ArchWarning says
	// when the override crosses ISA families (kernels built for another
	// ISA then run on it). All three are empty without an override.
	NativeArch, ArchSource, ArchWarning string
}

// MIG is what a MIG instance is part of, as NVML tells it.
type MIG struct {
	ParentUUID      string `json:"parent_uuid"`       // the GPU's "GPU-…" UUID
	ParentPCIBusID  string `json:"parent_pci_bus_id"` // the GPU's bus id, "dddd:bb:dd.f"
	GPUInstance     int    `json:"gpu_instance"`      // the GPU instance id; -1 where NVML cannot say
	ComputeInstance int    `json:"compute_instance"`  // the compute instance id within it; -1 where NVML cannot say
	Profile         string `json:"profile"`           // "1g.10gb", "1c.3g.40gb"; "" where NVML does not say
}
