package rng

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
)

// randomSeed is a seed from the operating system's random source, as
// torch.cuda.seed takes one.
func randomSeed() (uint64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("rng: reading a random seed: %w", err)
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}
