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
var ErrBadState = errors.New("bad generator state")

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
		return nil, fmt.Errorf("rng: %w", err)
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
		return fmt.Errorf("rng: %d bytes; want 16 (seed, offset) or 8 (seed): wrong size: %w", len(b), ErrBadState)
	}
	if err := next.validate(); err != nil {
		return fmt.Errorf("rng: %w", err)
	}
	*s = next
	return nil
}

// maxOffset is the largest offset torch's int64 holds.
const maxOffset = 1<<63 - 1

// validate refuses a state torch would not take. Its error has no prefix: the
// exported caller adds "rng: " and its context.
func (s State) validate() error {
	if s.Offset%4 != 0 {
		return fmt.Errorf("offset %d is not a multiple of 4: %w", s.Offset, ErrBadState)
	}
	if s.Offset > maxOffset {
		return fmt.Errorf("offset %d does not fit torch's int64: %w", s.Offset, ErrBadState)
	}
	return nil
}
