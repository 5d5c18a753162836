// Package devicetest checks a device.Backend against the contract in package
// device's documentation, in the manner of testing/slogtest and testing/fstest,
// for anyone who brings their own backend to device.Register or device.New.
// gpuinit runs it on sim, and on cuda and hip over their fake and real drivers.
//
// TestBackend exercises what can be seen from outside: how Init fails (mapped
// onto device's sentinels, with a hint), ordinals, device descriptions, the
// concurrency of the calls documented as safe at any time, laziness through a
// device.Runtime, and the generators of a device.GeneratorBackend. Counting
// wraps a backend to count calls into it.
package devicetest

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"sync"
	"testing"

	"github.com/gpuinit/gpuinit/device"
)

// An Option adjusts what TestBackend checks.
type Option func(*config)

type config struct {
	fill func(dst []uint32, seed, offset uint64)
}

// GeneratorsDraw makes TestBackend compare what the backend's generators draw
// with fill, such as philox.FillCURAND for a CUDA-like backend. It also says
// that the backend has generators where it runs: without the option a
// NewGenerator that returns ErrNotSupported skips the generator checks, with
// it that fails them.
func GeneratorsDraw(fill func(dst []uint32, seed, offset uint64)) Option {
	return func(c *config) { c.fill = fill }
}

var (
	uuidPattern  = regexp.MustCompile(`^(GPU|MIG)-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$|^GPU-[0-9a-f]{16}$`)
	pciBusIDForm = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
)

// TestBackend checks b against the Backend contract, as subtests of t. It calls
// b.Init itself, once. Where Init fails, it checks the failure and skips what
// needs a device; so the same call proves the no-device path on a machine
// without a GPU and the device paths on one with.
func TestBackend(t *testing.T, b device.Backend, opts ...Option) {
	t.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	name := b.Name()
	t.Run("Name", func(t *testing.T) {
		if name == "" || name == "auto" {
			t.Fatalf("Name() = %q: want the registered name", name)
		}
		if again := b.Name(); again != name {
			t.Errorf("Name() changed from %q to %q", name, again)
		}
	})
	t.Run("a Runtime over it is lazy", func(t *testing.T) { checkLazy(t, b) })

	// Init, with DriverVersion hammered from other goroutines meanwhile: it is
	// documented as safe at any time.
	var initErr error
	t.Run("Init, with DriverVersion called concurrently", func(t *testing.T) {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
						_, _ = b.DriverVersion()
					}
				}
			})
		}
		initErr = b.Init(context.Background())
		close(stop)
		wg.Wait()
		if initErr != nil {
			checkMapped(t, name, "Init", initErr)
		}
	})
	if initErr != nil {
		t.Run("devices", func(t *testing.T) { t.Skip("Init failed, so there is no device to check:", initErr) })
		return
	}
	var n int
	t.Run("devices", func(t *testing.T) { n = checkDevices(t, b) })
	if n == 0 {
		return
	}
	t.Run("concurrent queries after Init", func(t *testing.T) { checkConcurrentQueries(t, b, n) })
	if gb, ok := device.Capability[device.GeneratorBackend](b); ok {
		t.Run("generators", func(t *testing.T) { checkGenerators(t, gb, n, cfg.fill) })
	}
}

// unknownCode is CUDA_ERROR_UNKNOWN and hipErrorUnknown alike: the driver
// itself cannot say what failed, so no sentinel fits.
const unknownCode = 999

// checkMapped checks that a failure is a *device.DriverError of this backend,
// naming the call, with a hint.
func checkMapped(t *testing.T, backend, what string, err error) {
	t.Helper()
	var de *device.DriverError
	if !errors.As(err, &de) {
		t.Fatalf("%s failed with %T %q: want a *device.DriverError", what, err, err)
	}
	if de.Backend != backend {
		t.Errorf("%s's DriverError names backend %q, want %q", what, de.Backend, backend)
	}
	if de.Op == "" {
		t.Errorf("%s's DriverError does not name the call that failed", what)
	}
	if de.Hint == "" {
		t.Errorf("%s's DriverError %q says nothing about what to do", what, err)
	}
	sentinels := []error{device.ErrNoDevice, device.ErrDriverNotFound, device.ErrDriverMismatch, device.ErrNotSupported}
	if de.Code != unknownCode && !slices.ContainsFunc(sentinels, func(s error) bool { return errors.Is(err, s) }) {
		t.Errorf("%s's error %q matches none of device's sentinels", what, err)
	}
}

func checkLazy(t *testing.T, b device.Backend) {
	t.Helper()
	c := &Counting{Backend: b}
	r := device.New(c)
	ctx := context.Background()
	if err := r.LazyCall(ctx, func(context.Context) error { return nil }); err != nil {
		t.Fatalf("LazyCall before Init: %v", err)
	}
	_ = r.Name()
	_ = r.State()
	_ = r.IsInitialized()
	_ = r.CheckOrdinal(0)
	if calls := c.Calls(); calls.Total() != 0 {
		t.Errorf("New, LazyCall, Name, State and CheckOrdinal called into the backend: %+v", calls)
	}
}

// checkDevices checks Count and every Device, and that bad ordinals are
// refused; it returns the count.
func checkDevices(t *testing.T, b device.Backend) int {
	t.Helper()
	n, err := b.Count()
	if err != nil {
		t.Fatalf("Count after a successful Init: %v", err)
	}
	if n < 1 {
		t.Fatalf("Count() = %d after a successful Init: a backend without devices fails Init with device.ErrNoDevice", n)
	}
	for i := range n {
		info, err := b.Device(i)
		if err != nil {
			t.Errorf("Device(%d): %v", i, err)
			continue
		}
		if info.Name == "" || info.Arch == "" || info.TotalMemory == 0 {
			t.Errorf("Device(%d) = %+v: want a name, an arch and the total memory", i, info)
		}
		if info.UUID != "" && !uuidPattern.MatchString(info.UUID) {
			t.Errorf("Device(%d).UUID = %q: not the vendor tool's spelling", i, info.UUID)
		}
		if info.PCIBusID != "" && !pciBusIDForm.MatchString(info.PCIBusID) {
			t.Errorf("Device(%d).PCIBusID = %q: want dddd:bb:dd.f in lower case", i, info.PCIBusID)
		}
	}
	for _, bad := range []int{-1, n, n + 100} {
		if _, err := b.Device(bad); !errors.Is(err, device.ErrInvalidDevice) {
			t.Errorf("Device(%d) with %d devices: %v, want an error wrapping device.ErrInvalidDevice", bad, n, err)
		}
	}
	return n
}

func checkConcurrentQueries(t *testing.T, b device.Backend, n int) {
	t.Helper()
	want := make([]device.Info, n)
	for i := range want {
		want[i], _ = b.Device(i)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			if got, err := b.Count(); err != nil || got != n {
				t.Errorf("concurrent Count() = %d, %v; want %d", got, err, n)
			}
			if got, err := b.Device(g % n); err != nil || got != want[g%n] {
				t.Errorf("concurrent Device(%d) = %+v, %v; want %+v", g%n, got, err, want[g%n])
			}
			_, _ = b.DriverVersion()
		})
	}
	wg.Wait()
}

func checkGenerators(t *testing.T, b device.GeneratorBackend, n int, fill func([]uint32, uint64, uint64)) {
	t.Helper()
	if _, err := b.NewGenerator(n); err == nil {
		t.Errorf("NewGenerator(%d) with %d devices succeeded", n, n)
	}
	draw := func(seed, offset uint64, lengths ...int) []uint32 {
		t.Helper()
		g, err := b.NewGenerator(0)
		if errors.Is(err, device.ErrNotSupported) && fill == nil {
			t.Skip("generators are not supported here:", err)
		}
		if err != nil {
			t.Fatalf("NewGenerator(0): %v", err)
		}
		defer func() {
			if err := g.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}()
		if err := g.SetSeed(seed); err != nil {
			t.Fatalf("SetSeed: %v", err)
		}
		if err := g.SetOffset(offset); err != nil {
			t.Fatalf("SetOffset: %v", err)
		}
		var out []uint32
		for _, l := range lengths {
			buf := make([]uint32, l)
			if err := g.Generate(buf); err != nil {
				t.Fatalf("Generate(%d values): %v", l, err)
			}
			out = append(out, buf...)
		}
		return out
	}
	whole := draw(42, 8, 32)
	if again := draw(42, 8, 32); !slices.Equal(whole, again) {
		t.Errorf("two generators with seed 42 and offset 8 drew different values")
	}
	if split := draw(42, 8, 16, 16); !slices.Equal(whole, split) {
		t.Errorf("16 then 16 values differ from 32 at once: Generate does not continue the stream")
	}
	if fill != nil {
		want := make([]uint32, len(whole))
		fill(want, 42, 8)
		if !slices.Equal(whole, want) {
			t.Errorf("seed 42, offset 8: drew %08x, want %08x", whole, want)
		}
	}
}
