package rng

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/rng/philox"
)

// Generate initializes the runtime if needed, fills dst from device ordinal's
// generator at its current state, and advances the offset by len(dst) rounded up
// to a multiple of 4, as PyTorch's kernels do. On error the state is unchanged.
// The backend must implement driver.GeneratorBackend.
//
// A draw that would move the offset past torch's int64 limit (2^63-1) is
// refused with an error wrapping ErrBadState, and draws nothing: every state
// Generate leaves behind round-trips through MarshalBinary and SetState.
// Reseed to go on.
func (g *Generators) Generate(ctx context.Context, ordinal int, dst []uint32) error {
	nilContext(ctx, "Generate")
	return g.draw(ctx, ordinal, dst, false)
}

// drawOnDevice fills out from ordinal's device generator at d's state,
// creating the generator at the first draw. d's lock is held.
func (g *Generators) drawOnDevice(ctx context.Context, d *deviceGen, ordinal int, out []uint32) (err error) {
	if d.gen == nil {
		if d.gen, err = g.rt.NewGenerator(ctx, ordinal); err != nil {
			return deviceError("creating the generator of device", ordinal, err)
		}
	}
	if err := d.gen.SetSeed(d.state.Seed); err != nil {
		return deviceError("seeding device", ordinal, err)
	}
	if err := d.gen.SetOffset(d.state.Offset); err != nil {
		return deviceError("setting the offset of device", ordinal, err)
	}
	if len(out) == 0 {
		return nil
	}
	if err := d.gen.Generate(out); err != nil {
		return deviceError("generating on device", ordinal, err)
	}
	return nil
}

// GenerateOnHost is Generate on the CPU: it fills dst with what device
// ordinal's generator would draw at its current state (rng/philox, in the
// backend's Ordering) and advances the state as Generate does, with
// the same limit. It needs no device generator: a server whose backend has
// none draws the same stream this way, and a test can check a device's draw
// against it.
//
// Where the initialization found no GPU ([device.FallBackToCPU]), it draws
// on the CPU all the same, from the states the queued calls set, so that a
// server that falls back keeps the stream its seed chose. There any ordinal
// of 0 or more has a state (see the package doc).
func (g *Generators) GenerateOnHost(ctx context.Context, ordinal int, dst []uint32) error {
	nilContext(ctx, "GenerateOnHost")
	return g.draw(ctx, ordinal, dst, true)
}

// Ordering is how a backend's device generators lay Philox's stream out: its
// registration's driver.Ordering, with the CPU draw that matches it.
type Ordering driver.Ordering

const (
	// CURAND is cuRAND's default ordering (philox.FillCURAND): cuda and sim.
	CURAND = Ordering(driver.OrderingCURAND)
	// ROCRAND is rocRAND's, one sequential stream (philox.FillSequential): hip.
	ROCRAND = Ordering(driver.OrderingSequential)
)

// OrderingOf returns the ordering of rt's device generators, as the backend
// registered it (device.Runtime.Registration); CURAND before rt has a
// backend, and for a Runtime made by device.New.
func OrderingOf(rt Runtime) Ordering { return Ordering(rt.Registration().Ordering) }

// String is "curand" or "rocrand".
func (o Ordering) String() string {
	if o == ROCRAND {
		return "rocrand"
	}
	return "curand"
}

// Fill writes on the CPU what a device generator of this ordering draws
// after seeding with seed and moving to offset.
func (o Ordering) Fill(dst []uint32, seed, offset uint64) {
	if o == ROCRAND {
		philox.FillSequential(dst, seed, offset)
		return
	}
	philox.FillCURAND(dst, seed, offset)
}

// draw is Generate, or GenerateOnHost with onHost: it initializes the
// runtime if needed, locks device ordinal's state, draws whole blocks of 4
// from it (as PyTorch's kernels consume them; libcurand leaves a partial
// block unwritten after some offsets) into dst, or into a buffer of its own
// whose front goes to dst, and advances the offset by what was drawn. A draw
// that would move the offset past torch's int64 limit is refused; on error
// the state is unchanged. It calls no function of the caller's under the
// state's lock: only the backend's generator, or rng/philox. It waits for
// the lock no longer than ctx; a device draw on a lost device is refused at
// once with its loss.
func (g *Generators) draw(ctx context.Context, ordinal int, dst []uint32, onHost bool) error {
	if err := g.rt.Init(ctx); err != nil && !(onHost && g.fallBack(ctx, err)) {
		return err
	}
	d, err := g.device(ordinal)
	if err != nil {
		return err
	}
	if !onHost {
		// A lost device is refused before its lock, which a hung draw may
		// hold for ever.
		if err := g.rt.CheckDevice(ordinal); err != nil {
			return err
		}
	}
	if err := d.acquire(ctx, ordinal); err != nil {
		return err
	}
	defer d.release()
	if d.closed {
		return ErrClosed
	}
	if onHost {
		return drawOnHost(OrderingOf(g.rt), &d.state, dst, fmt.Sprintf("device %d", ordinal))
	}
	out, n, err := blocks(d.state, dst, fmt.Sprintf("device %d", ordinal))
	if err != nil {
		return err
	}
	if err := g.drawOnDevice(ctx, d, ordinal, out); err != nil {
		return err
	}
	if n != len(dst) {
		copy(dst, out)
	}
	d.state.Offset += uint64(n)
	return nil
}

// blocks returns where a draw of len(dst) values from s goes: dst itself, or
// a buffer of whole blocks of 4 whose front is copied to dst, and that
// buffer's length, by which the offset advances. A draw that would pass
// torch's offset limit is refused, naming what to reseed.
func blocks(s State, dst []uint32, what string) (out []uint32, n int, err error) {
	n = (len(dst) + 3) &^ 3
	if uint64(n) > maxOffset-s.Offset {
		return nil, 0, fmt.Errorf("rng: drawing %d values from offset %d would pass torch's offset limit %d; reseed %s: %w",
			len(dst), s.Offset, uint64(maxOffset), what, ErrBadState)
	}
	if n == len(dst) {
		return dst, n, nil
	}
	return make([]uint32, n), n, nil
}

// drawOnHost fills dst on the CPU from s in ordering o and advances s as a
// device draw does; on error s is unchanged.
func drawOnHost(o Ordering, s *State, dst []uint32, what string) error {
	out, n, err := blocks(*s, dst, what)
	if err != nil {
		return err
	}
	o.Fill(out, s.Seed, s.Offset)
	if n != len(dst) {
		copy(dst, out)
	}
	s.Offset += uint64(n)
	return nil
}

// deviceGen is one device's generator. Its lock is a semaphore of one, held
// while the state is read or changed and through a draw, which may take long
// (or, on a hung GPU, for ever): a caller waits for it no longer than its own
// context, and Close never waits for it.
type deviceGen struct {
	lock       chan struct{}    // holds a token while held
	state      State            // what the next draw uses
	gen        driver.Generator // created on the first Generate; nil after Close
	closed     bool             // Close has been here: nothing is created or drawn after
	closeAsked atomic.Bool      // Close found the lock held: its holder closes on release
}

func newDeviceGen() *deviceGen {
	return &deviceGen{lock: make(chan struct{}, 1), state: State{Seed: DefaultSeed}}
}

// acquire takes d's lock, waiting no longer than ctx.
func (d *deviceGen) acquire(ctx context.Context, ordinal int) error {
	select {
	case d.lock <- struct{}{}:
		return nil
	default:
	}
	select {
	case d.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("rng: waiting for device %d's generator, busy in another call: %w", ordinal, ctx.Err())
	}
}

// release lets d's lock go; if Close came meanwhile, whoever next takes the
// lock without waiting closes the generator (Close's own try comes after it
// asked, so one of the two does).
func (d *deviceGen) release() {
	<-d.lock
	if d.closeAsked.Load() {
		select {
		case d.lock <- struct{}{}:
			d.closeGenerator()
			<-d.lock
		default:
		}
	}
}

// closeGenerator destroys the generator, if any; d's lock is held.
func (d *deviceGen) closeGenerator() error {
	d.closed = true
	if d.gen == nil {
		return nil
	}
	err := d.gen.Close()
	d.gen = nil
	return err
}
