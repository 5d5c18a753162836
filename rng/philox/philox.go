// Package philox is Philox4x32-10 on the CPU, bit-exact with cuRAND.
//
// Philox4x32-10 is Salmon et al.'s (SC'11): [Block] is the counter-based
// permutation; [Stream] draws what curand_init and curand draw on the device;
// [FillCURAND] and [FillSequential] write what the cuRAND and rocRAND host
// generators write for a seed and offset.
//
// Everything here is pure, deterministic and safe for concurrent use, except a
// [Stream], which belongs to one goroutine at a time.
package philox

import "math/bits"

// The Philox4x32 constants: round multipliers and Weyl key increments.
const (
	m0 = 0xD2511F53
	m1 = 0xCD9E8D57
	w0 = 0x9E3779B9
	w1 = 0xBB67AE85
)

// Rounds is the round count of Philox4x32-10, the generator cuRAND and rocRAND use.
const Rounds = 10

// Block returns Philox4x32-10 of counter ctr under key: the four 32-bit outputs
// of one counter value.
func Block(ctr [4]uint32, key [2]uint32) [4]uint32 {
	return BlockRounds(ctr, key, Rounds)
}

// BlockRounds is Block with another round count (Random123's test vectors cover
// 7 rounds too). rounds must be at least 1.
func BlockRounds(ctr [4]uint32, key [2]uint32, rounds int) [4]uint32 {
	c0, c1, c2, c3 := ctr[0], ctr[1], ctr[2], ctr[3]
	k0, k1 := key[0], key[1]
	for r := 0; r < rounds; r++ {
		if r > 0 {
			k0 += w0
			k1 += w1
		}
		hi0, lo0 := bits.Mul32(m0, c0)
		hi1, lo1 := bits.Mul32(m1, c2)
		c0, c1, c2, c3 = hi1^c1^k0, lo1, hi0^c3^k1, lo0
	}
	return [4]uint32{c0, c1, c2, c3}
}

// block10 is Block with the rounds written out, for the hot loops.
func block10(c0, c1, c2, c3, k0, k1 uint32) (uint32, uint32, uint32, uint32) {
	var hi0, lo0, hi1, lo1 uint32
	round := func() {
		hi0, lo0 = bits.Mul32(m0, c0)
		hi1, lo1 = bits.Mul32(m1, c2)
		c0, c1, c2, c3 = hi1^c1^k0, lo1, hi0^c3^k1, lo0
		k0 += w0
		k1 += w1
	}
	round()
	round()
	round()
	round()
	round()
	round()
	round()
	round()
	round()
	round()
	return c0, c1, c2, c3
}

func seedKey(seed uint64) (uint32, uint32) { return uint32(seed), uint32(seed >> 32) }
