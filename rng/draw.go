package rng

import (
	"context"
	"fmt"

	"github.com/gpuinit/gpuinit/rng/philox"
)

// GenerateOnHost is Generate on the CPU: it fills dst with what device
// ordinal's generator would draw at its current state (rng/philox, in the
// backend's ordering: HostFill) and advances the state as Generate does, with
// the same limit. It needs no device generator: a server whose backend has
// none draws the same stream this way, and a test can check a device's draw
// against it.
func (g *Generators) GenerateOnHost(ctx context.Context, ordinal int, dst []uint32) error {
	d, err := g.lockedForDraw(ctx, ordinal)
	if err != nil {
		return err
	}
	defer d.mu.Unlock()
	n, err := d.drawSize(ordinal, len(dst))
	if err != nil {
		return err
	}
	fill, _ := HostFill(g.rt.Name())
	return d.fill(dst, n, func(out []uint32) error {
		fill(out, d.state.Seed, d.state.Offset)
		return nil
	})
}

// HostFill returns the rng/philox function that draws on the CPU what
// backend's device generators draw, and the name of that ordering:
// philox.FillSequential ("rocrand") for hip, philox.FillCURAND ("curand") for
// cuda, sim and the rest.
func HostFill(backend string) (fill func(dst []uint32, seed, offset uint64), ordering string) {
	if backend == "hip" {
		return philox.FillSequential, "rocrand"
	}
	return philox.FillCURAND, "curand"
}

// lockedForDraw initializes the runtime if needed and returns device
// ordinal's generator locked, for a draw; the caller unlocks it.
func (g *Generators) lockedForDraw(ctx context.Context, ordinal int) (*deviceGen, error) {
	if err := g.rt.Init(ctx); err != nil {
		return nil, err
	}
	d, err := g.device(ordinal)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, ErrClosed
	}
	return d, nil
}

// drawSize is how many values a draw of length values takes from the stream:
// whole blocks of 4, as PyTorch's kernels consume them (and libcurand leaves a
// partial block unwritten after some offsets). A draw that would move the
// offset past torch's int64 limit is refused. d.mu is held.
func (d *deviceGen) drawSize(ordinal, length int) (int, error) {
	n := (length + 3) &^ 3
	if uint64(n) > maxOffset-d.state.Offset {
		return 0, fmt.Errorf("%w: drawing %d values from offset %d would pass torch's offset limit %d; reseed device %d",
			ErrBadState, length, d.state.Offset, uint64(maxOffset), ordinal)
	}
	return n, nil
}

// fill runs draw for n values, into dst where it holds exactly n, then copies
// them to dst, and advances the offset by n; on error the state is unchanged.
// d.mu is held.
func (d *deviceGen) fill(dst []uint32, n int, draw func(out []uint32) error) error {
	out := dst
	if n != len(dst) {
		out = make([]uint32, n) // the whole last block, of which dst takes the front
	}
	if n > 0 {
		if err := draw(out); err != nil {
			return err
		}
	}
	if n != len(dst) {
		copy(dst, out)
	}
	d.state.Offset += uint64(n)
	return nil
}
