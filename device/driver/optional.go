package driver

import (
	"context"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
)

// Capability returns b as T, or the first Backend down b's Unwrap chain that
// implements T, such as GeneratorBackend or MemoryReporter: how device and
// rng find an optional interface through wrappers. An Unwrap chain must end
// (return a Backend without Unwrap, or nil).
func Capability[T any](b Backend) (T, bool) {
	for b != nil {
		if c, ok := b.(T); ok {
			return c, true
		}
		u, ok := b.(interface{ Unwrap() Backend })
		if !ok {
			break
		}
		b = u.Unwrap()
	}
	var none T
	return none, false
}

// RuntimeVersioner is implemented by backends that know the version of the
// vendor runtime next to the driver: hipRuntimeGetVersion, or for CUDA the
// toolkit version the backend was built for. The same rules as
// Backend.DriverVersion apply.
type RuntimeVersioner interface {
	RuntimeVersion() (int, error)
}

// GeneratorBackend is implemented by backends that offer device random number
// generators: Philox4x32-10 with cuRAND's (or hipRAND's) seed and offset, laid
// out as the backend's Registration.Ordering says.
type GeneratorBackend interface {
	Backend
	// NewGenerator creates a Philox generator on the device, seed 0, offset
	// 0. It is called after Init succeeded, from any goroutine. A backend
	// whose generator library cannot be loaded returns an error wrapping
	// ErrNotSupported; the device stays usable.
	NewGenerator(ordinal int) (Generator, error)
}

// Generator is one device Philox generator. It is not safe for concurrent use.
type Generator interface {
	SetSeed(seed uint64) error
	// SetOffset sets the absolute position in the stream, in 32-bit values.
	SetOffset(offset uint64) error
	// Generate fills dst and advances the stream by len(dst).
	Generate(dst []uint32) error
	// Close releases the generator; it must not be used after.
	Close() error
}

// MemoryReporter is implemented by backends that can read a device's free and
// total memory without creating a context or allocating anything.
type MemoryReporter interface {
	// MemoryInfo reports device ordinal's free and total memory in bytes.
	// It is called after Init succeeded, from any goroutine. Where it cannot
	// read them without side effects it returns an error wrapping
	// ErrNotSupported that says why.
	MemoryInfo(ordinal int) (free, total uint64, err error)
}

// DeviceRunner is implemented by backends that can make a device current on
// the calling OS thread, for a server's own cgo engines (cuBLAS, llama.cpp).
type DeviceRunner interface {
	// Do locks the calling goroutine to its OS thread, runs fn there with
	// device ordinal current (CUDA: its primary context; HIP: hipSetDevice),
	// and restores what the thread had before, even if fn panics.
	Do(ordinal int, fn func() error) error
}

// ErrorClassifier is implemented by backends that classify a raw code from a
// server's own driver calls with what only the loaded driver knows (its own
// name and description of the code). Where a backend does not implement it,
// device uses its Registration.Classify.
type ErrorClassifier interface {
	DriverError(op string, code int) *DriverError
}

// InitReporter is implemented by backends that can tell, without loading or
// initializing anything, whether this process's driver is initialized
// already: by this backend for another Runtime, or by a cgo engine that
// brought it up before gpuinit did. A Runtime then runs no preflight child
// for it, since there is nothing left to protect the process from.
type InitReporter interface {
	DriverInitialized() bool
}

// CanaryRunner is implemented by backends that can prove a device still does
// work: the readiness canary's round trip.
type CanaryRunner interface {
	// Canary allocates 4 bytes on device ordinal, has the device set them
	// to a pattern, copies them back, frees them, and checks the pattern.
	// It is called after Init succeeded, from any goroutine, under the
	// Runtime's call deadline. A failed call returns its *DriverError (Sticky
	// where the device is now unusable); a pattern that comes back wrong
	// returns a *DriverError with Sticky set, since the device's memory or
	// copy engine is broken.
	Canary(ordinal int) error
}

// CanaryPattern is the 32-bit value a canary sets and expects back.
const CanaryPattern uint32 = 0x9e3779b9

// MemorySource says where a memory figure came from.
type MemorySource string

// The sources of memory figures.
const (
	MemoryNVML          MemorySource = "nvml"           // NVML, by UUID: a MIG instance's own slice
	MemoryDriverContext MemorySource = "driver-context" // cuMemGetInfo in a primary context already active
	MemoryAMDVRAM       MemorySource = "amdgpu-vram"    // amdgpu's mem_info_vram_* in sysfs
	MemoryAMDGTT        MemorySource = "amdgpu-gtt"     // amdgpu's mem_info_gtt_* in sysfs: an APU's pool
	MemoryHost          MemorySource = "meminfo"        // /proc/meminfo's MemAvailable and MemTotal: memory an integrated GPU shares with the host
	MemorySimulated     MemorySource = "sim"            // the simulated backend's
)

// Memory is a device's free and total memory, and where the figures came
// from.
type Memory struct {
	Free, Total uint64
	Source      MemorySource
}

// MemoryReader is implemented by backends that say where their memory
// figures come from. ReadMemory has MemoryReporter.MemoryInfo's contract;
// where no source gives a true figure it returns an error wrapping
// ErrNotSupported ("unknown"), never a wrong number.
type MemoryReader interface {
	ReadMemory(ordinal int) (Memory, error)
}

// PhysicalIndexer is implemented by backends that know each device's number
// in the vendor tool's own numbering: NVML's index (nvidia-smi's GPU number,
// in PCI bus order) for CUDA, libhsakmt's node id (what
// HSA_OVERRIDE_GFX_VERSION_<n> counts) for HIP. It is called after Init
// succeeded, from any goroutine; -1 and an error where there is none.
type PhysicalIndexer interface {
	PhysicalIndex(ordinal int) (int, error)
}

// HealthWatcher is implemented by backends that can watch their devices'
// health after init: NVIDIA's NVML events (Xid critical errors, single- and
// double-bit ECC) and counters, amdgpu's RAS error counters.
type HealthWatcher interface {
	// WatchHealth watches the devices until ctx ends, calling report for
	// each event from the goroutine that called it, and then returns nil.
	// Where the devices cannot be watched at all (no NVML, no event API)
	// it returns an error wrapping ErrNotSupported at once: their health is
	// unknown. A failure while watching is reported as a
	// [healthwatch.KindWatchError] event and the watch is retried with
	// backoff: it never loses a device. It is called once per Runtime,
	// after Init succeeded; it must use no CPU between events (a blocking
	// wait, or a period of seconds), and must return within a few seconds of
	// ctx's end: a Runtime's Shutdown waits until its ctx ends, then abandons
	// a watch still in a driver call, and ignores what it reports from ctx's
	// end on.
	//
	// Every call it makes into a vendor library (the library's init, a
	// counters read) goes through [healthwatch.TrackCall] with ctx; an event
	// wait goes through [healthwatch.TrackWait] with its timeout. So the
	// Runtime holds each to a
	// deadline: a call that hangs makes the devices' health unknown, naming
	// the call, and never blocks a status, readiness or shutdown.
	WatchHealth(ctx context.Context, report func(healthwatch.Event)) error
}
