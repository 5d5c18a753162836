// Package rng keeps per-device Philox generator state, like torch.cuda.random.
//
// [Generators] has the semantics and the bytes of torch.cuda.random:
// [Generators.ManualSeed], [Generators.Seed], [Generators.InitialSeed],
// [Generators.State]/[Generators.SetState] and their …All forms, and
// [Generators.Generate]. Before the device runtime is initialized, the
// mutating calls are queued through [device.Runtime.LazyCall] in the order
// made, without coalescing or reordering, and replayed right after the
// driver's init; reads initialize first, as torch does. Arguments are
// validated when a call is made, so a bad call is refused at once and never
// queued; a state is applied whole or not at all.
//
// What can be known only at initialization (an ordinal beyond the devices
// found, a state per device for another count) fails that queued call alone.
// The initialization succeeds and the calls queued after it apply. The
// failure is its own: the runtime records it with the call site that queued
// it ([device.Stats].FailedCalls, the health status), and no other call
// returns it. [Generators] is shared by every request of a server, so one
// request's bad ordinal must not fail another's next call, as a buffered
// writer's next Write would. PyTorch raises such a failure from whatever
// call initializes and leaves the queue to be re-run, so one bad call stops
// every caller.
//
// Where the initialization finds no GPU ([device.FallBackToCPU]), the
// Generators move onto the CPU: the calls queued before it apply to the
// states drawn there, in order, and [Generators.GenerateOnHost] draws the
// stream the device would have drawn, with no seed given again. [Host] is
// the same stream for a program with no device.Runtime at all.
package rng

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// DefaultSeed is the seed of a generator nobody has seeded: PyTorch's
// default_rng_seed_val.
const DefaultSeed uint64 = 67280421310721

// ErrBadState is wrapped by every error about a malformed generator state.
var ErrBadState = errors.New("rng: bad generator state")

// State is one device generator's state: the Philox seed and the offset, in
// 32-bit values, of the next draw. Its binary form is torch.cuda.get_rng_state's.
type State struct {
	Seed   uint64
	Offset uint64 // a multiple of 4
}

// MarshalBinary returns the 16 bytes torch.cuda.get_rng_state returns: the seed,
// then the offset, both little-endian.
func (s State) MarshalBinary() ([]byte, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, s.Seed)
	binary.LittleEndian.PutUint64(b[8:], s.Offset)
	return b, nil
}

// UnmarshalBinary accepts what torch.cuda.set_rng_state accepts: 16 bytes (seed,
// offset) or 8 bytes (seed only, offset 0). Any other length, or an offset that
// is not a multiple of 4 or does not fit an int64, is an error wrapping
// ErrBadState, and s is left unchanged.
func (s *State) UnmarshalBinary(b []byte) error {
	var next State
	switch len(b) {
	case 8:
		next.Seed = binary.LittleEndian.Uint64(b)
	case 16:
		next.Seed = binary.LittleEndian.Uint64(b)
		next.Offset = binary.LittleEndian.Uint64(b[8:])
	default:
		return fmt.Errorf("%w: %d bytes; want 16 (seed, offset) or 8 (seed): wrong size", ErrBadState, len(b))
	}
	if err := next.validate(); err != nil {
		return err
	}
	*s = next
	return nil
}

// maxOffset is the largest offset torch's int64 holds.
const maxOffset = 1<<63 - 1

func (s State) validate() error {
	if s.Offset%4 != 0 {
		return fmt.Errorf("%w: offset %d is not a multiple of 4", ErrBadState, s.Offset)
	}
	if s.Offset > maxOffset {
		return fmt.Errorf("%w: offset %d does not fit torch's int64", ErrBadState, s.Offset)
	}
	return nil
}
