package philox

import "math/bits"

// Stream is one device-API Philox stream: what curand_init(seed, subsequence,
// offset, &state) followed by curand, curand4 and curand_uniform draw for
// CURAND_RNG_PSEUDO_PHILOX4_32_10. The m-th 32-bit value after NewStream is word
// p%4 of Block(p/4, key) with p = 2^66*subsequence + offset + m and key the seed's
// low and high halves. A Stream is not safe for concurrent use.
type Stream struct {
	key [2]uint32
	ctr [4]uint32 // the 128-bit block counter, word 0 lowest
	out [4]uint32 // Block(ctr, key)
	idx int       // next word of out, 0..3
}

// NewStream returns the stream curand_init(seed, subsequence, offset) sets up.
func NewStream(seed, subsequence, offset uint64) *Stream {
	s := &Stream{}
	s.key[0], s.key[1] = seedKey(seed)
	s.addCounter(0, subsequence)
	s.Skip(offset)
	return s
}

// addCounter adds lo + hi·2^64 to the 128-bit counter, wrapping.
func (s *Stream) addCounter(lo, hi uint64) {
	c0 := uint64(s.ctr[0]) | uint64(s.ctr[1])<<32
	c1 := uint64(s.ctr[2]) | uint64(s.ctr[3])<<32
	c0, carry := bits.Add64(c0, lo, 0)
	c1 += hi + carry
	s.ctr = [4]uint32{uint32(c0), uint32(c0 >> 32), uint32(c1), uint32(c1 >> 32)}
	s.out = Block(s.ctr, s.key)
}

// Skip advances the stream by n 32-bit values, as skipahead(n, &state).
func (s *Stream) Skip(n uint64) {
	blocks := n / 4
	s.idx += int(n % 4)
	if s.idx >= 4 {
		s.idx -= 4
		blocks++
	}
	s.addCounter(blocks, 0)
}

// SkipSubsequence advances by n subsequences of 2^66 values each, as
// skipahead_sequence(n, &state).
func (s *Stream) SkipSubsequence(n uint64) {
	s.addCounter(0, n)
}

// Uint32 returns the next value, as curand(&state).
func (s *Stream) Uint32() uint32 {
	v := s.out[s.idx]
	s.idx++
	if s.idx == 4 {
		s.idx = 0
		s.addCounter(1, 0)
	}
	return v
}

// Uint32x4 returns the next four values, as curand4(&state).
func (s *Stream) Uint32x4() [4]uint32 {
	if s.idx == 0 {
		v := s.out
		s.addCounter(1, 0)
		return v
	}
	return [4]uint32{s.Uint32(), s.Uint32(), s.Uint32(), s.Uint32()}
}

// Uniform returns the next value as a float32 in (0, 1], as curand_uniform.
func (s *Stream) Uniform() float32 { return Uniform(s.Uint32()) }

// Uniform converts one 32-bit value as curand_uniform does: x·2^-32 + 2^-33 in
// float32 arithmetic, in (0, 1]; x ≥ 0xFFFFFF80 gives exactly 1.
func Uniform(x uint32) float32 {
	const twoM32 = 1.0 / (1 << 32)
	const twoM33 = twoM32 / 2
	return float32(x)*float32(twoM32) + float32(twoM33)
}
