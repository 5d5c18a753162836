package rng

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/lazy"
)

// Runtime is what Generators need of a device runtime. *device.Runtime is the
// implementation; the interface lets tools run the same calls over another
// initialization discipline (gpuprobe's -discipline legacy).
type Runtime interface {
	Name() string
	// Registration is what the backend registered with: its generators'
	// ordering.
	Registration() driver.Registration
	// NewGenerator creates device ordinal's generator, whose calls the
	// Runtime watches (device.Runtime.NewGenerator).
	NewGenerator(ctx context.Context, ordinal int) (driver.Generator, error)
	// CheckDevice validates an ordinal without initializing, and returns
	// the device's loss, if it is lost (device.Runtime.CheckDevice).
	CheckDevice(ordinal int) error
	// Init initializes on first use and returns the memoized result.
	Init(ctx context.Context) error
	// LazyCallDepth runs fn now when initialized, else queues it; the call site
	// recorded is depth frames above its caller.
	LazyCallDepth(ctx context.Context, depth int, fn lazy.Func) error
	// DeviceCount initializes on first use and reports the device count.
	DeviceCount(ctx context.Context) (int, error)
}

var _ Runtime = (*device.Runtime)(nil)

// ErrClosed is returned by every method of Generators after Close.
var ErrClosed = errors.New("rng: Generators used after Close")

// Generators holds the per-device generator states of one device runtime. It is
// safe for concurrent use. Create it with New; Close it to release the device
// generators. Every method that takes a Context panics when it is nil, naming
// the method, as net/http does for a nil request context.
type Generators struct {
	rt Runtime

	mu      sync.Mutex // protects following fields
	devices map[int]*deviceGen
	closed  bool
	pending []*pendingCall // mutating calls made and not yet run, in call order
	cpuBase State          // on the CPU: the state of an ordinal not seen yet

	onCPU    atomic.Bool // the initialization found no GPU: the states are the CPU's
	replayed atomic.Bool // and the calls queued before are made: calls go there at once
	moving   sync.Mutex  // serializes the move onto the CPU
}

// New returns the generators of rt's devices. Nothing is initialized or created
// until used. Where rt has RegisterOnShutdown (a *device.Runtime), the
// generators' Close is registered there, so that rt's Shutdown closes them.
func New(rt Runtime) *Generators {
	g := &Generators{rt: rt, devices: map[int]*deviceGen{}}
	if s, ok := rt.(interface {
		RegisterOnShutdown(func(context.Context) error)
	}); ok {
		s.RegisterOnShutdown(func(context.Context) error { return g.Close() })
	}
	return g
}

// Runtime returns the runtime the generators belong to.
func (g *Generators) Runtime() Runtime { return g.rt }

// device returns ordinal's generator, checking the ordinal against the devices
// the initialization found.
// On the CPU, after a fallback, there are no devices to check it against:
// any ordinal of 0 or more has a state.
func (g *Generators) device(ordinal int) (*deviceGen, error) {
	onCPU := g.onCPU.Load()
	if onCPU && ordinal < 0 {
		return nil, fmt.Errorf("rng: ordinal %d: ordinals start at 0: %w", ordinal, device.ErrInvalidDevice)
	}
	if !onCPU {
		if err := g.rt.CheckDevice(ordinal); err != nil && !errors.Is(err, device.ErrDeviceLost) {
			return nil, err // a lost device keeps its state: only its draws are refused
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, ErrClosed
	}
	d := g.devices[ordinal]
	if d == nil {
		d = newDeviceGen()
		if onCPU {
			d.state = g.cpuBase
		}
		g.devices[ordinal] = d
	}
	return d, nil
}

// mutate runs apply on ordinal's state now if the runtime is initialized, else
// queues it. depth counts the frames from mutate's caller to the exported
// method (1 when that method calls mutate itself), so that the call site
// recorded for queued work is the user's line, not this file's.
func (g *Generators) mutate(ctx context.Context, depth int, ordinal int, apply func(*State)) error {
	if err := g.usable(); err != nil {
		return err
	}
	if ordinal < 0 {
		return fmt.Errorf("rng: ordinal %d: ordinals start at 0: %w", ordinal, device.ErrInvalidDevice)
	}
	run := func(ctx context.Context) error {
		_, err := g.apply(ctx, ordinal, apply)
		return err
	}
	return g.lazyCall(ctx, depth+1, run, run)
}

// apply runs f on ordinal's state under the state's lock, and reports whether
// it did. Generators closed since the work was queued have nothing to apply
// it to, and no reason to fail the runtime: that is false and no error.
func (g *Generators) apply(ctx context.Context, ordinal int, f func(*State)) (applied bool, err error) {
	d, err := g.device(ordinal)
	if errors.Is(err, ErrClosed) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := d.acquire(ctx, ordinal); err != nil {
		return false, err
	}
	defer d.release()
	if d.closed {
		return false, nil
	}
	f(&d.state)
	return true, nil
}

// mutateAll is mutate for every device, with apply told which device. check
// sees the device count first and can refuse the whole call, so that nothing is
// half-applied.
//
// onCPU is the call made on the CPU, after a fallback, where there is no
// device count.
func (g *Generators) mutateAll(ctx context.Context, depth int, check func(devices int) error, apply func(ordinal int, s *State),
	onCPU func(context.Context) error) error {
	if err := g.usable(); err != nil {
		return err
	}
	return g.lazyCall(ctx, depth+1, onCPU, func(ctx context.Context) error {
		// Initialized by now; ctx marks this as part of the initialization.
		n, err := g.rt.DeviceCount(ctx)
		if err != nil {
			return err
		}
		if err := check(n); err != nil {
			return err
		}
		for ordinal := range n {
			if applied, err := g.apply(ctx, ordinal, func(s *State) { apply(ordinal, s) }); !applied {
				return err
			}
		}
		return nil
	})
}

// usable returns ErrClosed after Close.
func (g *Generators) usable() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ErrClosed
	}
	return nil
}

// ManualSeed sets device ordinal's seed and resets its offset to 0, like
// torch.cuda.manual_seed. Before initialization it is queued (and returns
// nil). An ordinal beyond the devices found then fails this call alone,
// not the initialization and no other call (see the package doc).
func (g *Generators) ManualSeed(ctx context.Context, ordinal int, seed uint64) error {
	nilContext(ctx, "ManualSeed")
	return g.mutate(ctx, 1, ordinal, func(s *State) { *s = State{Seed: seed} })
}

// ManualSeedAll is ManualSeed on every device.
func (g *Generators) ManualSeedAll(ctx context.Context, seed uint64) error {
	nilContext(ctx, "ManualSeedAll")
	set := func(s *State) { *s = State{Seed: seed} }
	return g.mutateAll(ctx, 1, func(int) error { return nil }, func(_ int, s *State) { set(s) },
		func(ctx context.Context) error { return g.setAllOnCPU(ctx, set) })
}

// Seed seeds device ordinal non-deterministically (crypto/rand) and returns the
// seed, which is chosen now even if applying it is queued.
func (g *Generators) Seed(ctx context.Context, ordinal int) (uint64, error) {
	nilContext(ctx, "Seed")
	seed, err := randomSeed()
	if err != nil {
		return 0, err
	}
	return seed, g.mutate(ctx, 1, ordinal, func(s *State) { *s = State{Seed: seed} })
}

// SeedAll seeds every device with one non-deterministic seed, like
// torch.cuda.seed_all, and returns it.
func (g *Generators) SeedAll(ctx context.Context) (uint64, error) {
	nilContext(ctx, "SeedAll")
	seed, err := randomSeed()
	if err != nil {
		return 0, err
	}
	set := func(s *State) { *s = State{Seed: seed} }
	return seed, g.mutateAll(ctx, 1, func(int) error { return nil }, func(_ int, s *State) { set(s) },
		func(ctx context.Context) error { return g.setAllOnCPU(ctx, set) })
}

// SetState sets device ordinal's seed and offset, like torch.cuda.set_rng_state.
// A state whose offset is not a multiple of 4 is refused at once and never
// queued.
func (g *Generators) SetState(ctx context.Context, ordinal int, state State) error {
	nilContext(ctx, "SetState")
	if err := state.validate(); err != nil {
		return fmt.Errorf("rng: %w", err)
	}
	return g.mutate(ctx, 1, ordinal, func(s *State) { *s = state })
}

// SetStateAll sets every device's state; states[i] is device i's. Every state is
// validated at once; at replay, a length other than the device count fails and
// changes nothing.
func (g *Generators) SetStateAll(ctx context.Context, states []State) error {
	nilContext(ctx, "SetStateAll")
	for i, s := range states {
		if err := s.validate(); err != nil {
			return fmt.Errorf("rng: device %d: %w", i, err)
		}
	}
	states = append([]State(nil), states...)
	return g.mutateAll(ctx, 1, func(devices int) error {
		if len(states) != devices {
			return fmt.Errorf("rng: %d states for %d devices: %w", len(states), devices, ErrBadState)
		}
		return nil
	}, func(ordinal int, s *State) { *s = states[ordinal] }, func(ctx context.Context) error {
		for ordinal, state := range states {
			if _, err := g.apply(ctx, ordinal, func(s *State) { *s = state }); err != nil {
				return err
			}
		}
		return nil
	})
}

// InitialSeed initializes the runtime if needed and returns device ordinal's
// seed, like torch.cuda.initial_seed.
func (g *Generators) InitialSeed(ctx context.Context, ordinal int) (uint64, error) {
	nilContext(ctx, "InitialSeed")
	s, err := g.State(ctx, ordinal)
	return s.Seed, err
}

// State initializes the runtime if needed and returns device ordinal's state,
// like torch.cuda.get_rng_state.
func (g *Generators) State(ctx context.Context, ordinal int) (State, error) {
	nilContext(ctx, "State")
	if err := g.rt.Init(ctx); err != nil && !g.fallBack(ctx, err) {
		return State{}, err
	}
	d, err := g.device(ordinal)
	if err != nil {
		return State{}, err
	}
	if err := d.acquire(ctx, ordinal); err != nil {
		return State{}, err
	}
	defer d.release()
	if d.closed {
		return State{}, ErrClosed
	}
	return d.state, nil
}

// StateAll initializes the runtime if needed and returns every device's state.
func (g *Generators) StateAll(ctx context.Context) ([]State, error) {
	nilContext(ctx, "StateAll")
	n, err := g.rt.DeviceCount(ctx)
	if err != nil {
		return nil, err
	}
	states := make([]State, n)
	for i := range states {
		if states[i], err = g.State(ctx, i); err != nil {
			return nil, err
		}
	}
	return states, nil
}

// Close destroys every device generator the Generators created and refuses
// later use with ErrClosed. Work queued before Close that runs after it does
// nothing: it neither applies nor fails the runtime's initialization. Close
// never waits for a draw in flight, which may be stuck in a hung driver: the
// draw's generator is closed when the draw returns, by the draw. Close is
// safe to call more than once and from many goroutines; only the first call
// does anything, and it returns the errors of the generators it closed that
// failed to close, joined.
func (g *Generators) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	devices := g.devices
	g.devices = nil
	g.mu.Unlock()
	var errs []error
	for ordinal, d := range devices {
		d.closeAsked.Store(true)
		select {
		case d.lock <- struct{}{}:
		default:
			continue // a draw holds it, and closes the generator when it lets go
		}
		if err := d.closeGenerator(); err != nil {
			errs = append(errs, deviceError("closing the generator of device", ordinal, err))
		}
		<-d.lock
	}
	return errors.Join(errs...)
}

// deviceError is err, of what rng did on device ordinal, in rng's words:
// "rng: seeding device 0: " and err's message without device's own prefix,
// so that one package's prefix leads. errors.Is and errors.As see err.
func deviceError(what string, ordinal int, err error) error {
	return &wrapped{msg: fmt.Sprintf("rng: %s %d: %s", what, ordinal, strings.TrimPrefix(err.Error(), "device: ")), err: err}
}

// wrapped is an error with a message of its own over err.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }
