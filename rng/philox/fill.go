package philox

import (
	"runtime"

	"golang.org/x/sync/errgroup"
)

// parallelMin is the fill length from which the fills spread over all cores;
// below it a goroutine costs more than it saves.
const parallelMin = 1 << 16

// FillCURAND writes what cuRAND's host API curandGenerate writes into dst for a
// CURAND_RNG_PSEUDO_PHILOX4_32_10 generator with the default ordering, after
// curandSetPseudoRandomGeneratorSeed(seed) and curandSetGeneratorOffset(offset).
// A generator that has already produced n values continues as FillCURAND with
// offset+n, while offset+n fits in 64 bits (past that, see below).
//
// cuRAND interleaves 65536 subsequences: value i is word e%4 of
// Block((lo32(j/65536), hi32(j/65536), j%65536, 0), seed) with e = offset+i and
// j = e/4. The stream position e is not bounded by 2^64: past it cuRAND keeps
// counting (measured against libcurand 10.3), and so does FillCURAND, so a fill
// that crosses 2^64 continues the stream rather than wrapping to its start.
// Large fills use every core; the result is the same either way.
func FillCURAND(dst []uint32, seed, offset uint64) { fill(dst, seed, offset, curandCounter) }

// FillSequential writes what rocRAND's host generator (Philox, default ordering)
// writes: one sequential stream, value i being word e%4 of Block(e/4, seed) with
// e = offset+i, e/4 taken as a 128-bit counter. It is also the device-API
// stream of subsequence 0, and like FillCURAND it keeps counting past 2^64.
func FillSequential(dst []uint32, seed, offset uint64) { fill(dst, seed, offset, sequentialCounter) }

// A counterLayout maps a block index j to the Philox counter words.
type counterLayout func(j uint64) (c0, c1, c2, c3 uint32)

func curandCounter(j uint64) (uint32, uint32, uint32, uint32) {
	hi := j >> 16
	return uint32(hi), uint32(hi >> 32), uint32(j & 0xFFFF), 0
}

func sequentialCounter(j uint64) (uint32, uint32, uint32, uint32) {
	return uint32(j), uint32(j >> 32), 0, 0
}

// position is a place in the stream as a block index and a word in that block.
// Stream positions can exceed 2^64 (offset+len(dst)), block indices cannot: a
// position is at most 2^64-1 + 2^63, so its block index stays below 2^63.
type position struct {
	block uint64
	word  int // 0..3
}

// at returns the position n values after offset, without overflow.
func at(offset uint64, n int) position {
	p := offset%4 + uint64(n) // below 2^63+3
	return position{block: offset/4 + p/4, word: int(p % 4)}
}

func fill(dst []uint32, seed, offset uint64, layout counterLayout) {
	workers := runtime.GOMAXPROCS(0)
	if len(dst) < parallelMin || workers == 1 {
		fillRange(dst, seed, at(offset, 0), layout)
		return
	}
	// Chunks are a multiple of 4 values long; where offset%4 != 0 each one
	// starts and ends inside a block, which fillRange handles at both ends.
	chunk := (len(dst)/workers + 3) &^ 3
	var g errgroup.Group
	for start := 0; start < len(dst); start += chunk {
		part := dst[start:min(start+chunk, len(dst))]
		from := at(offset, start)
		g.Go(func() error { fillRange(part, seed, from, layout); return nil })
	}
	_ = g.Wait() // the workers cannot fail
}

// fillRange writes the values from position p on into dst.
func fillRange(dst []uint32, seed uint64, p position, layout counterLayout) {
	k0, k1 := seedKey(seed)
	i := 0
	j := p.block
	if p.word != 0 { // finish the partial block p starts in
		out := blockAt(layout, j, k0, k1)
		i = copy(dst, out[p.word:])
		j++
	}
	for ; i+4 <= len(dst); i += 4 {
		c0, c1, c2, c3 := layout(j)
		dst[i], dst[i+1], dst[i+2], dst[i+3] = block10(c0, c1, c2, c3, k0, k1)
		j++
	}
	if i < len(dst) {
		out := blockAt(layout, j, k0, k1)
		copy(dst[i:], out[:])
	}
}

// blockAt is block j of the stream, for the partial blocks at either end.
func blockAt(layout counterLayout, j uint64, k0, k1 uint32) [4]uint32 {
	c0, c1, c2, c3 := layout(j)
	o0, o1, o2, o3 := block10(c0, c1, c2, c3, k0, k1)
	return [4]uint32{o0, o1, o2, o3}
}
