// Package devicetest checks a GPU backend against package driver's contract.
//
// It checks a [driver.Backend] against the contract in package [driver]'s
// documentation, in the manner of [testing/slogtest] and [testing/fstest], for
// anyone who brings their own backend to [device.Register] or [device.New].
// gpuinit runs it on sim, and on cuda and hip over their fake and real
// drivers.
//
// [TestBackend] exercises what can be seen from outside, as subtests of a
// [*testing.T]: how Init fails (mapped onto driver's sentinels, with a hint),
// ordinals, device descriptions, the concurrency of the calls documented as
// safe from many goroutines, laziness through a [device.Runtime], and the
// optional interfaces the backend has: the generators of a
// [driver.GeneratorBackend], a [driver.MemoryReader]'s figures, a
// [driver.CanaryRunner]'s round trip, and a [driver.HealthWatcher]'s stop. [Check] runs the same checks and
// returns what they found as an error, for use outside a test. [Counting]
// wraps a backend to count calls into it.
package devicetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
)

// An Option adjusts what TestBackend and Check check.
type Option func(*config)

type config struct {
	fill      func(dst []uint32, seed, offset uint64)
	watchStop time.Duration // the health watch's bound to return; 0 is watchStopBound
}

// GeneratorsDraw makes the kit compare what the backend's generators draw
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

// TestBackend checks b against the Backend contract, as subtests of t, one
// per part of the contract. It calls b.Init itself, once. Where Init fails,
// it checks the failure and skips what needs a device; so the same call
// proves the no-device path on a machine without a GPU and the device paths
// on one with.
func TestBackend(t *testing.T, b driver.Backend, opts ...Option) {
	t.Helper()
	walk(b, opts, func(part string, check func(*checker)) {
		t.Run(part, func(t *testing.T) {
			t.Helper()
			c := &checker{}
			check(c)
			for _, e := range c.findings() {
				t.Error(e)
			}
			if c.skip != "" && !t.Failed() {
				t.Skip(c.skip)
			}
		})
	})
}

// Check is TestBackend outside a test: it runs the same checks and returns
// nil if b keeps the contract, else an error joining every rule it broke,
// each prefixed with the part of the contract it belongs to. A part that
// cannot run (no device after a failed Init) is not a finding. Like
// TestBackend, it calls b.Init once.
func Check(b driver.Backend, opts ...Option) error {
	var errs []error
	walk(b, opts, func(part string, check func(*checker)) {
		c := &checker{}
		check(c)
		for _, e := range c.findings() {
			errs = append(errs, fmt.Errorf("%s: %s", part, e))
		}
	})
	return errors.Join(errs...)
}

// checker collects one part's findings; it is safe from many goroutines.
type checker struct {
	mu   sync.Mutex // protects following fields
	errs []string
	skip string
}

func (c *checker) errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

func (c *checker) skipf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skip = fmt.Sprintf(format, args...)
}

func (c *checker) findings() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.errs)
}

// walk runs the kit's parts in order, each through do, which runs check and
// reports its findings; later parts see what earlier ones learned (Init's
// result, the device count).
func walk(b driver.Backend, opts []Option, do func(part string, check func(*checker))) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	name := b.Name()
	do("Name", func(c *checker) {
		if name == "" || name == "auto" {
			c.errorf("Name() = %q: want the registered name", name)
		}
		if again := b.Name(); again != name {
			c.errorf("Name() changed from %q to %q", name, again)
		}
	})
	do("a Runtime over it is lazy", func(c *checker) { checkLazy(c, b) })
	do("DriverVersion before Init", func(c *checker) {
		// Init may have run already in this process (a backend whose driver
		// state is the process's): then an answer is due.
		v, err := b.DriverVersion()
		switch {
		case err != nil && !errors.Is(err, driver.ErrNotInitialized):
			c.errorf("DriverVersion before Init failed with %q: want an answer, or an error wrapping driver.ErrNotInitialized", err)
		case err == nil && v <= 0:
			c.errorf("DriverVersion before Init answered %d and no error: want a version, or an error wrapping driver.ErrNotInitialized", v)
		}
	})

	// Init, with DriverVersion hammered from other goroutines meanwhile: it is
	// documented as safe at any time.
	var initErr error
	do("Init, with DriverVersion called concurrently", func(c *checker) {
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
			checkMapped(c, name, "Init", initErr)
		}
		// A backend whose driver state is the process's memoizes Init: a
		// second Runtime sees the first one's outcome, never a fresh one.
		if again := b.Init(context.Background()); (again == nil) != (initErr == nil) {
			c.errorf("a second Init returned %v after the first returned %v: want the same outcome", again, initErr)
		}
	})
	if initErr != nil {
		do("devices", func(c *checker) { c.skipf("Init failed, so there is no device to check: %v", initErr) })
		return
	}
	var n int
	do("devices", func(c *checker) { n = checkDevices(c, b) })
	if n == 0 {
		return
	}
	do("concurrent queries after Init", func(c *checker) { checkConcurrentQueries(c, b, n) })
	if gb, ok := driver.Capability[driver.GeneratorBackend](b); ok {
		do("generators", func(c *checker) { checkGenerators(c, gb, n, cfg.fill) })
	}
	if mr, ok := driver.Capability[driver.MemoryReader](b); ok {
		do("memory reader", func(c *checker) { checkMemoryReader(c, mr, n) })
	}
	if cr, ok := driver.Capability[driver.CanaryRunner](b); ok {
		do("canary", func(c *checker) { checkCanary(c, cr, n) })
	}
	if hw, ok := driver.Capability[driver.HealthWatcher](b); ok {
		do("health watch", func(c *checker) { checkHealthWatcher(c, hw, n, cmp.Or(cfg.watchStop, watchStopBound)) })
	}
}

// unknownCode is CUDA_ERROR_UNKNOWN and hipErrorUnknown alike: the driver
// itself cannot say what failed, so no sentinel fits.
const unknownCode = 999

// checkMapped checks that a failure is a *driver.DriverError of this backend,
// naming the call, with a hint.
func checkMapped(c *checker, backend, what string, err error) {
	var de *driver.DriverError
	if !errors.As(err, &de) {
		c.errorf("%s failed with %T %q: want a *driver.DriverError", what, err, err)
		return
	}
	if de.Backend != backend {
		c.errorf("%s's DriverError names backend %q, want %q", what, de.Backend, backend)
	}
	if de.Op == "" {
		c.errorf("%s's DriverError does not name the call that failed", what)
	}
	if de.Hint == "" {
		c.errorf("%s's DriverError %q says nothing about what to do", what, err)
	}
	sentinels := []error{driver.ErrNoDevice, driver.ErrDriverNotFound, driver.ErrDriverMismatch, driver.ErrNotSupported}
	if de.Code != unknownCode && !slices.ContainsFunc(sentinels, func(s error) bool { return errors.Is(err, s) }) {
		c.errorf("%s's error %q matches none of driver's sentinels", what, err)
	}
}

func checkLazy(c *checker, b driver.Backend) {
	counting := &Counting{Backend: b}
	r := device.New(counting)
	ctx := context.Background()
	if err := r.LazyCall(ctx, func(context.Context) error { return nil }); err != nil {
		c.errorf("LazyCall before Init: %v", err)
		return
	}
	_ = r.Name()
	_ = r.Stats()
	_ = r.CheckDevice(0)
	if calls := counting.Calls(); calls.Total() != 0 {
		c.errorf("New, LazyCall, Name, Stats and CheckDevice called into the backend: %+v", calls)
	}
}

// checkDevices checks Count and every Device, and that bad ordinals are
// refused; it returns the count, or 0 when there is nothing more to check.
func checkDevices(c *checker, b driver.Backend) int {
	n, err := b.Count()
	if err != nil {
		c.errorf("Count after a successful Init: %v", err)
		return 0
	}
	if n < 1 {
		c.errorf("Count() = %d after a successful Init: a backend without devices fails Init with driver.ErrNoDevice", n)
		return 0
	}
	for i := range n {
		info, err := b.Device(i)
		if err != nil {
			c.errorf("Device(%d): %v", i, err)
			continue
		}
		if info.Name == "" || info.Arch == "" || info.TotalMemory == 0 {
			c.errorf("Device(%d) = %+v: want a name, an arch and the total memory", i, info)
		}
		if info.UUID != "" && !uuidPattern.MatchString(info.UUID) {
			c.errorf("Device(%d).UUID = %q: not the vendor tool's spelling", i, info.UUID)
		}
		if info.PCIBusID != "" && !pciBusIDForm.MatchString(info.PCIBusID) {
			c.errorf("Device(%d).PCIBusID = %q: want dddd:bb:dd.f in lower case", i, info.PCIBusID)
		}
	}
	for _, bad := range []int{-1, n, n + 100} {
		if _, err := b.Device(bad); !errors.Is(err, driver.ErrInvalidDevice) {
			c.errorf("Device(%d) with %d devices: %v, want an error wrapping driver.ErrInvalidDevice", bad, n, err)
		}
	}
	return n
}

func checkConcurrentQueries(c *checker, b driver.Backend, n int) {
	want := make([]driver.Info, n)
	for i := range want {
		want[i], _ = b.Device(i)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			if got, err := b.Count(); err != nil || got != n {
				c.errorf("concurrent Count() = %d, %v; want %d", got, err, n)
			}
			if got, err := b.Device(g % n); err != nil || got != want[g%n] {
				c.errorf("concurrent Device(%d) = %+v, %v; want %+v", g%n, got, err, want[g%n])
			}
			_, _ = b.DriverVersion()
		})
	}
	wg.Wait()
}

func checkGenerators(c *checker, b driver.GeneratorBackend, n int, fill func([]uint32, uint64, uint64)) {
	if _, err := b.NewGenerator(n); err == nil {
		c.errorf("NewGenerator(%d) with %d devices succeeded", n, n)
	}
	// draw returns what a new generator draws in pieces of lengths, or nil
	// after it reported why it could not.
	draw := func(seed, offset uint64, lengths ...int) []uint32 {
		g, err := b.NewGenerator(0)
		if errors.Is(err, driver.ErrNotSupported) && fill == nil {
			c.skipf("generators are not supported here: %v", err)
			return nil
		}
		if err != nil {
			c.errorf("NewGenerator(0): %v", err)
			return nil
		}
		defer func() {
			if err := g.Close(); err != nil {
				c.errorf("Close: %v", err)
			}
		}()
		if err := g.SetSeed(seed); err != nil {
			c.errorf("SetSeed: %v", err)
			return nil
		}
		if err := g.SetOffset(offset); err != nil {
			c.errorf("SetOffset: %v", err)
			return nil
		}
		var out []uint32
		for _, l := range lengths {
			buf := make([]uint32, l)
			if err := g.Generate(buf); err != nil {
				c.errorf("Generate(%d values): %v", l, err)
				return nil
			}
			out = append(out, buf...)
		}
		return out
	}
	whole := draw(42, 8, 32)
	if whole == nil {
		return
	}
	if again := draw(42, 8, 32); again != nil && !slices.Equal(whole, again) {
		c.errorf("two generators with seed 42 and offset 8 drew different values")
	}
	if split := draw(42, 8, 16, 16); split != nil && !slices.Equal(whole, split) {
		c.errorf("16 then 16 values differ from 32 at once: Generate does not continue the stream")
	}
	if fill != nil {
		want := make([]uint32, len(whole))
		fill(want, 42, 8)
		if !slices.Equal(whole, want) {
			c.errorf("seed 42, offset 8: drew %s, want %s", hex(whole), hex(want))
		}
	}
}

func hex(v []uint32) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%08x", x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
