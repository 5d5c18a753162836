package device

import "context"

// Backend is what a GPU platform provides. Implementations need not be safe for
// concurrent use before Init returns: Runtime calls Init once and reads device
// information once, under its own initialization.
type Backend interface {
	// Name is the registered name: "cuda", "hip", "sim".
	Name() string
	// Init is the native initialization, cuInit(0) or hipInit(0).
	Init(ctx context.Context) error
	// DriverVersion reports the driver's version (CUDA: 12020 for 12.2). The
	// real drivers answer this before Init.
	DriverVersion() (int, error)
	// Count reports the number of devices; valid after Init.
	Count() (int, error)
	// Device describes one device, 0 <= ordinal < Count().
	Device(ordinal int) (Info, error)
}

// Info describes one device. It is read once, at initialization.
type Info struct {
	Ordinal     int
	Name        string // e.g. "NVIDIA H200"
	Arch        string // e.g. "sm_90", "gfx90a"
	TotalMemory uint64 // bytes
}

// GeneratorBackend is implemented by backends that offer device random number
// generators: Philox4x32-10 with cuRAND's (or hipRAND's) seed and offset.
type GeneratorBackend interface {
	Backend
	// NewGenerator creates a Philox generator on the device, seed 0, offset 0.
	NewGenerator(ordinal int) (Generator, error)
}

// Generator is one device Philox generator. It is not safe for concurrent use.
type Generator interface {
	SetSeed(seed uint64) error
	// SetOffset sets the absolute position in the stream, in 32-bit values.
	SetOffset(offset uint64) error
	// Generate fills dst and advances the stream by len(dst).
	Generate(dst []uint32) error
	Close() error
}
