// Package sim is gpuinit's simulated GPU backend, registered as "sim".
//
// It is pure Go, always available, with plausible CUDA-like devices whose
// Philox generators draw exactly cuRAND's numbers ([philox.FillCURAND]). Its
// errors come from the same code table as the cuda backend's, so a simulated
// failure reads as the real one does. The failures it can simulate are asked
// for through options ([WithFailure], [WithDevices], [WithInitDelay]) or the
// environment ([OptionsFromEnv]):
//
//	GPUINIT_SIM_DEVICES     number of devices, 0..64 (default 2; 0 fails Init with no-device)
//	GPUINIT_SIM_INIT_DELAY  how long Init takes, a time.ParseDuration string (default 0)
//	GPUINIT_SIM_FAIL        no-device | not-ready | no-driver | driver-mismatch | unknown | panic | hang
//
// Every variable follows one rule: unset, empty or blank means the default. A
// value that does not parse is an error from Open, never a silent default.
// Failures it does not simulate include the loader's own (a stub library, a
// missing symbol): the fake driver libraries in the cuda and hip tests show
// those through the real loading code.
package sim

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
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
	NotReady       Failure = "not-ready"       // CUDA_ERROR_SYSTEM_NOT_READY, as while the fabric manager starts
	NoDriver       Failure = "no-driver"       // libcuda.so.1 cannot be loaded
	DriverMismatch Failure = "driver-mismatch" // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
	Unknown        Failure = "unknown"         // CUDA_ERROR_UNKNOWN, as after suspend/resume
	Panic          Failure = "panic"           // the driver call panics
	Hang           Failure = "hang"            // the driver call never returns
)

var failures = []Failure{NoDevice, NotReady, NoDriver, DriverMismatch, Unknown, Panic, Hang}

// MaxDevices bounds WithDevices and GPUINIT_SIM_DEVICES.
const MaxDevices = 64

// DriverVersion is the version the simulated driver reports.
const DriverVersion = 12020

func init() { device.Register(Registration()) }

// Registration is what the package registers with device.DefaultRegistry when
// it is imported: "sim", not a GPU platform (auto never picks it), whose
// Open reads OptionsFromEnv, whose generators draw in cuRAND's ordering, and
// whose codes classify by CUDA's table, as its errors do.
func Registration() driver.Registration {
	return driver.Registration{
		Name: "sim",
		Open: func() (driver.Backend, error) {
			opts, err := OptionsFromEnv()
			if err != nil {
				return nil, err
			}
			return New(opts...), nil
		},
		Ordering:   driver.OrderingCURAND,
		Visibility: driver.VisibilityCUDA,
		Env:        envVars,
		Classify:   driverError,
	}
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
// GPUINIT_SIM_FAIL. A variable that is unset, empty or blank is left at its
// default; any other value it cannot use is an error wrapping
// driver.ErrBadSetting that names the variable.
func OptionsFromEnv() ([]Option, error) {
	var opts []Option
	for _, v := range []struct {
		name  string
		parse func(string) (Option, error)
	}{{EnvDevices, parseDevices}, {EnvInitDelay, parseInitDelay}, {EnvFail, parseFail}} {
		value := env(v.name)
		if value == "" {
			continue
		}
		o, err := v.parse(value)
		if err != nil {
			return nil, err
		}
		opts = append(opts, o)
	}
	return opts, nil
}

// envVars are the variables of the registered "sim", for Open's checks and
// README.md's table of settings.
var envVars = []driver.EnvVar{
	{Name: EnvDevices, Doc: "sim's number of devices, 0 to 64; 0 fails Init with no-device", Default: "2",
		Check: check(parseDevices)},
	{Name: EnvInitDelay, Doc: "how long sim's Init takes, a Go duration such as 250ms", Default: "0",
		Check: check(parseInitDelay)},
	{Name: EnvFail, Doc: "the failure sim's Init simulates: " + failureNames(), Default: "none: Init succeeds",
		Check: check(parseFail)},
}

// check makes a driver.EnvVar's Check of a parse.
func check(parse func(string) (Option, error)) func(string) error {
	return func(v string) error { _, err := parse(v); return err }
}

func parseDevices(v string) (Option, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > MaxDevices {
		return nil, fmt.Errorf("sim: %s=%q: want a whole number of devices from 0 to %d: %w", EnvDevices, v, MaxDevices, driver.ErrBadSetting)
	}
	return WithDevices(n), nil
}

func parseInitDelay(v string) (Option, error) {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return nil, fmt.Errorf("sim: %s=%q: want a duration such as 250ms: %v: %w", EnvInitDelay, v, err, driver.ErrBadSetting)
	case d < 0:
		return nil, fmt.Errorf("sim: %s=%q: want a non-negative duration such as 250ms: %w", EnvInitDelay, v, driver.ErrBadSetting)
	}
	return WithInitDelay(d), nil
}

func parseFail(v string) (Option, error) {
	f := Failure(v)
	for _, known := range failures {
		if f == known {
			return WithFailure(f), nil
		}
	}
	return nil, fmt.Errorf("sim: %s=%q: want one of %s: %w", EnvFail, v, failureNames(), driver.ErrBadSetting)
}

// failureNames lists the failures Init can simulate, for messages.
func failureNames() string {
	names := make([]string, len(failures))
	for i, k := range failures {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// env is the variable's value with blanks trimmed; "" when unset.
func env(name string) string { return strings.TrimSpace(os.Getenv(name)) }

// Backend is a simulated GPU platform. It is safe for concurrent use.
type Backend struct {
	devices int
	delay   time.Duration
	failure Failure

	initialized atomic.Bool

	mu      sync.Mutex                        // protects following fields
	lost    map[int]int                       // ordinal -> the sticky CUresult its calls now fail with
	watches map[chan watchMsg]context.Context // the running health watches, and their contexts
}

// New returns a simulated backend: 2 devices that succeed at once, unless
// options say otherwise.
func New(opts ...Option) *Backend {
	b := &Backend{devices: 2}
	for _, o := range opts {
		o(b)
	}
	if b.devices < 0 || b.devices > MaxDevices {
		panic(fmt.Sprintf("sim: WithDevices(%d): want 0..%d", b.devices, MaxDevices))
	}
	return b
}

// Name returns "sim".
func (b *Backend) Name() string { return "sim" }

// Init simulates cuInit(0): the configured delay (cut short by ctx), then the
// configured failure, if any.
func (b *Backend) Init(ctx context.Context) error {
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
		// As a driver call in C would: blocked for ever, and never seen by
		// the Go runtime as a deadlock (a timer stays pending), so that a
		// preflight child that hangs here hangs rather than crashing.
		for {
			time.Sleep(time.Hour)
		}
	case NoFailure:
		if b.devices == 0 {
			return driverError("cuInit", 100)
		}
		b.initialized.Store(true)
		return nil
	case NoDriver:
		return &driver.DriverError{Backend: "sim", Op: "dlopen", Sentinel: driver.ErrDriverNotFound,
			Message: "libcuda.so.1: cannot open shared object file: No such file or directory (tried libcuda.so.1)",
			Hint:    drivercodes.CUDANotFoundHint}
	case NoDevice:
		return driverError("cuInit", 100)
	case NotReady:
		return driverError("cuInit", 802)
	case DriverMismatch:
		return driverError("cuInit", 803)
	}
	return driverError("cuInit", 999)
}

// DriverVersion reports 12020, before Init too, as loaded libcuda does; with the
// no-driver failure it fails as a missing library would.
func (b *Backend) DriverVersion() (int, error) {
	if b.failure == NoDriver {
		return 0, fmt.Errorf("sim: the simulated driver library is missing: %w", driver.ErrNotInitialized)
	}
	return DriverVersion, nil
}

// Count reports the number of devices; before a successful Init it fails with
// CUDA_ERROR_NOT_INITIALIZED, as the real driver does.
func (b *Backend) Count() (int, error) {
	if !b.initialized.Load() {
		return 0, driverError("cuDeviceGetCount", 3)
	}
	return b.devices, nil
}

// Device describes device ordinal: a simulated Hopper GPU with 80 GiB.
func (b *Backend) Device(ordinal int) (driver.Info, error) {
	if err := b.checkDevice(ordinal); err != nil {
		return driver.Info{}, err
	}
	return driver.Info{
		Ordinal:         ordinal,
		Name:            "gpuinit simulated H100",
		Arch:            "sm_90",
		TotalMemory:     totalMemory,
		UUID:            fmt.Sprintf("GPU-5e1d0c0a-9a7f-4b6e-8d2c-%012x", ordinal),
		PCIBusID:        fmt.Sprintf("0000:%02x:00.0", 0x18+ordinal),
		ComputeMajor:    9,
		Multiprocessors: 132,
	}, nil
}

// totalMemory is every simulated device's memory.
const totalMemory = 80 << 30

// checkDevice fails as cuDeviceGet does before Init (3) or for an ordinal out
// of range (101).
func (b *Backend) checkDevice(ordinal int) error {
	if !b.initialized.Load() {
		return driverError("cuDeviceGet", 3)
	}
	if ordinal < 0 || ordinal >= b.devices {
		return driverError("cuDeviceGet", 101)
	}
	return nil
}

// LoseDevice makes device ordinal fail from now on as a GPU does after a
// sticky error: every later generator draw, MemoryInfo and Do on it returns
// the CUDA error code (700 CUDA_ERROR_ILLEGAL_ADDRESS, 719
// CUDA_ERROR_LAUNCH_FAILED, 214 CUDA_ERROR_ECC_UNCORRECTABLE...). For tests
// of what a server does with a device that dies after init.
func (b *Backend) LoseDevice(ordinal, code int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lost == nil {
		b.lost = map[int]int{}
	}
	b.lost[ordinal] = code
}

// lostError is the error a lost device's calls return, or nil.
func (b *Backend) lostError(op string, ordinal int) error {
	b.mu.Lock()
	code, lost := b.lost[ordinal]
	b.mu.Unlock()
	if !lost {
		return nil
	}
	return driverError(op, code)
}

// DriverError classifies a CUresult as the cuda backend does, as backend sim.
func (b *Backend) DriverError(op string, code int) *driver.DriverError { return driverError(op, code) }

// UsedMemory is how much of each simulated device's memory is in use.
const UsedMemory = 3 << 30

// MemoryInfo reports 77 of 80 GiB free on every device, as a GPU with a
// server's model loaded might.
func (b *Backend) MemoryInfo(ordinal int) (free, total uint64, err error) {
	if err := b.checkDevice(ordinal); err != nil {
		return 0, 0, err
	}
	if err := b.lostError("cuMemGetInfo_v2", ordinal); err != nil {
		return 0, 0, err
	}
	return totalMemory - UsedMemory, totalMemory, nil
}

// ReadMemory is MemoryInfo's figures, from driver.MemorySimulated.
func (b *Backend) ReadMemory(ordinal int) (driver.Memory, error) {
	free, total, err := b.MemoryInfo(ordinal)
	if err != nil {
		return driver.Memory{}, err
	}
	return driver.Memory{Free: free, Total: total, Source: driver.MemorySimulated}, nil
}

// Do runs fn on a locked OS thread, as the real backends do; sim has no
// current device to set, so there is nothing to restore either.
func (b *Backend) Do(ordinal int, fn func() error) error {
	if err := b.checkDevice(ordinal); err != nil {
		return err
	}
	if err := b.lostError("cuCtxSetCurrent", ordinal); err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return fn()
}

// NewGenerator returns a generator that draws what cuRAND's Philox host
// generator draws (philox.FillCURAND).
func (b *Backend) NewGenerator(ordinal int) (driver.Generator, error) {
	if err := b.checkDevice(ordinal); err != nil {
		return nil, err
	}
	return &generator{b: b, ordinal: ordinal}, nil
}

type generator struct {
	b            *Backend
	ordinal      int
	seed, offset uint64
}

func (g *generator) SetSeed(seed uint64) error     { g.seed = seed; return nil }
func (g *generator) SetOffset(offset uint64) error { g.offset = offset; return nil }
func (g *generator) Close() error                  { return nil }
func (g *generator) Generate(dst []uint32) error {
	if err := g.b.lostError("curandGenerate", g.ordinal); err != nil {
		return err
	}
	philox.FillCURAND(dst, g.seed, g.offset)
	g.offset += uint64(len(dst))
	return nil
}

// driverError is what libcuda would return for code, from the cuda backend's
// own table, as backend "sim".
func driverError(op string, code int) *driver.DriverError {
	e := drivercodes.CUDA.Error(op, code, "", "")
	e.Backend = "sim"
	return e
}
