package rng

import (
	"fmt"
	"sync"
)

// Host is one generator's state drawn on the CPU, for a server that serves
// without a GPU: the stream a device generator of its Ordering would draw,
// with PyTorch's rounding of the offset to blocks of 4 and its int64 limit,
// as Generators.GenerateOnHost draws it. It needs no device.Runtime, so it
// works where initialization failed ([device.FallBackToCPU]). Its zero value is
// a generator in cuRAND's ordering with seed 0; it is safe for concurrent
// use, each draw continuing where the last ended.
type Host struct {
	mu       sync.Mutex // protects following fields
	state    State
	ordering Ordering
}

// NewHost returns a Host in ordering o, seeded with seed at offset 0, like
// torch.manual_seed.
func NewHost(o Ordering, seed uint64) *Host {
	return &Host{state: State{Seed: seed}, ordering: o}
}

// Generate fills dst from the current state, advances it, and returns the
// state the values were drawn from. A draw past torch's offset limit is
// refused with an error wrapping ErrBadState, and changes nothing.
func (h *Host) Generate(dst []uint32) (from State, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	from = h.state
	return from, drawOnHost(h.ordering, &h.state, dst, "the host generator")
}

// State returns the current state, like torch.get_rng_state.
func (h *Host) State() State {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state
}

// SetState sets the state, like torch.set_rng_state; a state whose offset is
// not a multiple of 4 is refused and changes nothing.
func (h *Host) SetState(s State) error {
	if err := s.validate(); err != nil {
		return fmt.Errorf("rng: Host.SetState: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.state = s
	return nil
}
