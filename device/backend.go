package device

import "context"

// Capability returns b as T, or the first Backend down b's Unwrap chain that
// implements T, such as GeneratorBackend or MemoryReporter: how the Runtime,
// and rng, find an optional interface through wrappers. An Unwrap chain must
// end (return a Backend without Unwrap, or nil).
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

// Backend is what a GPU platform provides: the driver's own calls, made once.
// Runtime adds the laziness, the memoization and the queue on top.
//
// How Runtime calls a Backend, which is what an implementation may rely on:
//   - Name may be called at any time, from any goroutine; it must not touch
//     the driver.
//   - Init is called once per Runtime, from the Runtime's initialization
//     goroutine. It may load the driver library. ctx carries no cancellation
//     (the initialization outlives any one caller) but keeps the first
//     caller's values. A backend instance shared by several Runtimes (New
//     over the same value; see Open for the one window where the process can
//     have two) sees one Init per Runtime, possibly concurrently: a backend
//     whose driver state is the process's, as cuda's and hip's, memoizes it.
//   - Count, then Device for each ordinal, are called once each, after Init
//     succeeded, from the same goroutine. Runtime caches what they return.
//   - DriverVersion may be called at any time, from any goroutine, before,
//     during and after Init. It must not load or initialize anything: before
//     Init it answers only if the driver can without initializing (sim can;
//     cuda and hip load their library at Init, so they answer only after
//     it), else it returns an error wrapping ErrNotInitialized.
//
// Optional capabilities are interfaces of their own, as in database/sql/driver:
// RuntimeVersioner, GeneratorBackend, MemoryReporter, DeviceRunner,
// ErrorClassifier. A Backend that wraps another (to count, log or inject
// faults) implements Unwrap() Backend, and the Runtime finds the optional
// interfaces it does not implement itself in the one it wraps, as
// http.ResponseController does for a ResponseWriter. The package devicetest
// checks the Backend contract and generators.
type Backend interface {
	// Name is the registered name: "cuda", "hip", "sim".
	Name() string
	// Init is the native initialization, cuInit(0) or hipInit(0).
	Init(ctx context.Context) error
	// DriverVersion reports the driver's version (CUDA: 12020 for 12.2).
	DriverVersion() (int, error)
	// Count reports the number of devices; valid after Init.
	Count() (int, error)
	// Device describes one device, 0 <= ordinal < Count().
	Device(ordinal int) (Info, error)
}

// RuntimeVersioner is implemented by backends that know the version of the
// vendor runtime next to the driver: hipRuntimeGetVersion, or for CUDA the
// toolkit version the backend was built for. The same rules as DriverVersion
// apply.
type RuntimeVersioner interface {
	RuntimeVersion() (int, error)
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
	// APUs): its free memory is not VRAM.
	Integrated bool
}

// GeneratorBackend is implemented by backends that offer device random number
// generators: Philox4x32-10 with cuRAND's (or hipRAND's) seed and offset.
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
