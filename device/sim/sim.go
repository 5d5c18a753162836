// Package sim is gpuinit's simulated GPU backend, registered as "sim": pure Go,
// always available, with plausible devices whose Philox generators draw exactly
// cuRAND's numbers. It counts every call made into it, so tests can prove that
// nothing touched the "driver", and every failure of the real drivers can be
// asked for through options or the environment:
//
//	GPUINIT_SIM_DEVICES     number of devices, 0..64 (default 2; 0 fails Init with no-device)
//	GPUINIT_SIM_INIT_DELAY  how long Init takes, a time.ParseDuration string (default 0)
//	GPUINIT_SIM_FAIL        no-device | no-driver | driver-mismatch | unknown | panic | hang
//
// A value that does not parse is an error from Open, never a silent default.
package sim

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/rng/philox"
)

// The environment variables the registered "sim" backend reads at Open.
const (
	EnvDevices   = "GPUINIT_SIM_DEVICES"
	EnvInitDelay = "GPUINIT_SIM_INIT_DELAY"
	EnvFail      = "GPUINIT_SIM_FAIL"
)

// Failure is a failure Init simulates.
type Failure string

// The failures Init can simulate, as the real drivers show them.
const (
	NoFailure      Failure = ""
	NoDevice       Failure = "no-device"       // CUDA_ERROR_NO_DEVICE
	NoDriver       Failure = "no-driver"       // the driver library is missing
	DriverMismatch Failure = "driver-mismatch" // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
	Unknown        Failure = "unknown"         // CUDA_ERROR_UNKNOWN, as after suspend/resume
	Panic          Failure = "panic"           // the driver call panics
	Hang           Failure = "hang"            // the driver call never returns
)

var failures = []Failure{NoDevice, NoDriver, DriverMismatch, Unknown, Panic, Hang}

// MaxDevices bounds WithDevices and GPUINIT_SIM_DEVICES.
const MaxDevices = 64

// DriverVersion is the version the simulated driver reports.
const DriverVersion = 12020

func init() {
	device.Register("sim", func() (device.Backend, error) {
		opts, err := OptionsFromEnv()
		if err != nil {
			return nil, err
		}
		return New(opts...), nil
	})
}

// Option configures a Backend.
type Option func(*Backend)

// WithDevices sets the number of devices (default 2). New panics outside 0..MaxDevices.
func WithDevices(n int) Option { return func(b *Backend) { b.devices = n } }

// WithInitDelay makes Init take d, honouring ctx.
func WithInitDelay(d time.Duration) Option { return func(b *Backend) { b.delay = d } }

// WithFailure makes Init fail as f.
func WithFailure(f Failure) Option { return func(b *Backend) { b.failure = f } }

// OptionsFromEnv reads GPUINIT_SIM_DEVICES, GPUINIT_SIM_INIT_DELAY and
// GPUINIT_SIM_FAIL. It fails on any value it cannot use, naming the variable.
func OptionsFromEnv() ([]Option, error) {
	var opts []Option
	if v, ok := os.LookupEnv(EnvDevices); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 || n > MaxDevices {
			return nil, fmt.Errorf("sim: %s=%q: want a whole number of devices from 0 to %d", EnvDevices, v, MaxDevices)
		}
		opts = append(opts, WithDevices(n))
	}
	if v, ok := os.LookupEnv(EnvInitDelay); ok {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("sim: %s=%q: want a non-negative duration such as 250ms", EnvInitDelay, v)
		}
		opts = append(opts, WithInitDelay(d))
	}
	if v, ok := os.LookupEnv(EnvFail); ok && v != "" {
		f := Failure(strings.TrimSpace(v))
		found := false
		for _, known := range failures {
			found = found || f == known
		}
		if !found {
			names := make([]string, len(failures))
			for i, k := range failures {
				names[i] = string(k)
			}
			return nil, fmt.Errorf("sim: %s=%q: want one of %s", EnvFail, v, strings.Join(names, ", "))
		}
		opts = append(opts, WithFailure(f))
	}
	return opts, nil
}

// Calls counts the calls made into a Backend.
type Calls struct {
	Init, DriverVersion, Count, Device, NewGenerator int64
}

// Total is the sum of all calls.
func (c Calls) Total() int64 {
	return c.Init + c.DriverVersion + c.Count + c.Device + c.NewGenerator
}

// Backend is a simulated GPU platform. It is safe for concurrent use.
type Backend struct {
	devices int
	delay   time.Duration
	failure Failure

	initialized atomic.Bool
	calls       struct{ init, driverVersion, count, device, newGenerator atomic.Int64 }
	hang        chan struct{} // never closed: what a hung driver call waits on
}

// New returns a simulated backend: 2 devices that succeed at once, unless
// options say otherwise.
func New(opts ...Option) *Backend {
	b := &Backend{devices: 2, hang: make(chan struct{})}
	for _, o := range opts {
		o(b)
	}
	if b.devices < 0 || b.devices > MaxDevices {
		panic(fmt.Sprintf("sim: WithDevices(%d): want 0..%d", b.devices, MaxDevices))
	}
	return b
}

// Calls reports how many calls have been made into b so far.
func (b *Backend) Calls() Calls {
	return Calls{
		Init:          b.calls.init.Load(),
		DriverVersion: b.calls.driverVersion.Load(),
		Count:         b.calls.count.Load(),
		Device:        b.calls.device.Load(),
		NewGenerator:  b.calls.newGenerator.Load(),
	}
}

// Name returns "sim".
func (b *Backend) Name() string { return "sim" }

// Init simulates cuInit(0): the configured delay (cut short by ctx), then the
// configured failure, if any.
func (b *Backend) Init(ctx context.Context) error {
	b.calls.init.Add(1)
	if b.delay > 0 {
		t := time.NewTimer(b.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	switch b.failure {
	case Panic:
		panic("sim: simulated driver panic in Init")
	case Hang:
		<-b.hang
	case NoFailure:
		if b.devices == 0 {
			return driverError("cuInit", NoDevice)
		}
		b.initialized.Store(true)
		return nil
	}
	return driverError("cuInit", b.failure)
}

// DriverVersion reports 12020, before Init too, as libcuda does; with the
// no-driver failure it fails as a missing library would.
func (b *Backend) DriverVersion() (int, error) {
	b.calls.driverVersion.Add(1)
	if b.failure == NoDriver {
		return 0, driverError("cuDriverGetVersion", NoDriver)
	}
	return DriverVersion, nil
}

// Count reports the number of devices; before a successful Init it fails with
// CUDA_ERROR_NOT_INITIALIZED, as the real driver does.
func (b *Backend) Count() (int, error) {
	b.calls.count.Add(1)
	if !b.initialized.Load() {
		return 0, notInitialized("cuDeviceGetCount")
	}
	return b.devices, nil
}

// Device describes device ordinal: a simulated Hopper GPU with 80 GiB.
func (b *Backend) Device(ordinal int) (device.Info, error) {
	b.calls.device.Add(1)
	if !b.initialized.Load() {
		return device.Info{}, notInitialized("cuDeviceGet")
	}
	if ordinal < 0 || ordinal >= b.devices {
		return device.Info{}, fmt.Errorf("%w: sim: ordinal %d of %d devices", device.ErrInvalidDevice, ordinal, b.devices)
	}
	return device.Info{Ordinal: ordinal, Name: "gpuinit simulated H100", Arch: "sm_90", TotalMemory: 80 << 30}, nil
}

// NewGenerator returns a generator that draws what cuRAND's Philox host
// generator draws (philox.FillCURAND).
func (b *Backend) NewGenerator(ordinal int) (device.Generator, error) {
	b.calls.newGenerator.Add(1)
	if _, err := b.Device(ordinal); err != nil {
		return nil, err
	}
	return &generator{}, nil
}

type generator struct{ seed, offset uint64 }

func (g *generator) SetSeed(seed uint64) error     { g.seed = seed; return nil }
func (g *generator) SetOffset(offset uint64) error { g.offset = offset; return nil }
func (g *generator) Close() error                  { return nil }
func (g *generator) Generate(dst []uint32) error {
	philox.FillCURAND(dst, g.seed, g.offset)
	g.offset += uint64(len(dst))
	return nil
}

func notInitialized(op string) error {
	return &device.DriverError{Backend: "sim", Op: op, Code: 3, Name: "CUDA_ERROR_NOT_INITIALIZED",
		Message: "initialization error", Hint: "call Init first"}
}

func driverError(op string, f Failure) error {
	e := &device.DriverError{Backend: "sim", Op: op}
	switch f {
	case NoDevice:
		e.Code, e.Name, e.Message, e.Sentinel = 100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected", device.ErrNoDevice
		e.Hint = "check CUDA_VISIBLE_DEVICES and nvidia-smi; in a container, run with --gpus all"
	case NoDriver:
		e.Code, e.Name, e.Message, e.Sentinel = 35, "CUDA_ERROR_INSUFFICIENT_DRIVER", "the driver library could not be loaded", device.ErrDriverNotFound
		e.Hint = "install the NVIDIA driver (libcuda.so.1) or mount it into the container"
	case DriverMismatch:
		e.Code, e.Name, e.Message, e.Sentinel = 803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination", device.ErrDriverMismatch
		e.Hint = "the user-space driver and the kernel module differ: reboot after a driver upgrade, or match the container's libcuda to the host"
	default:
		e.Code, e.Name, e.Message = 999, "CUDA_ERROR_UNKNOWN", "unknown error"
		e.Hint = "often after suspend/resume: reload the nvidia_uvm module or reboot"
	}
	return e
}
