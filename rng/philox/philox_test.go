package philox

import (
	"bufio"
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// katPath holds Random123's known-answer vectors; testdata/README.md says where
// they come from.
const katPath = "testdata/random123_kat_philox4x32.txt"

func TestBlockMatchesRandom123KnownAnswers(t *testing.T) {
	f, err := os.Open(katPath)
	require.NoError(t, err)
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		require.Len(t, fields, 12, sc.Text())
		rounds, err := strconv.Atoi(fields[1])
		require.NoError(t, err)
		var w [10]uint32
		for k := range w {
			v, err := strconv.ParseUint(fields[2+k], 16, 32)
			require.NoError(t, err)
			w[k] = uint32(v)
		}
		ctr, key := [4]uint32{w[0], w[1], w[2], w[3]}, [2]uint32{w[4], w[5]}
		want := [4]uint32{w[6], w[7], w[8], w[9]}
		assert.Equal(t, want, BlockRounds(ctr, key, rounds), "line %q", sc.Text())
		if rounds == Rounds {
			assert.Equal(t, want, Block(ctr, key))
			o0, o1, o2, o3 := block10(ctr[0], ctr[1], ctr[2], ctr[3], key[0], key[1])
			assert.Equal(t, want, [4]uint32{o0, o1, o2, o3}, "unrolled block")
		}
		n++
	}
	require.NoError(t, sc.Err())
	assert.Equal(t, 110, n, "every vector in the file was checked")
}

func TestFillCURANDMatchesMeasuredCURAND(t *testing.T) {
	// Measured from libcurand 10.3.0.86's host generator, seed 42, offset 0
	// (device/cuda's oracle test compares with it live).
	want := []uint32{0x9ceaf053, 0x77f5493b, 0x12bf50ad, 0x5742b3d7, 0x02933769, 0x2051e913, 0x3b68b038, 0xb62c409c}
	got := make([]uint32, len(want))
	FillCURAND(got, 42, 0)
	assert.Equal(t, want, got)
}

// blockIndex is (offset+i)/4 and (offset+i)%4 for a stream position that may
// pass 2^64, computed in 128 bits: the closed form, independent of fill.go.
func blockIndex(offset, i uint64) (j uint64, word int) {
	lo, hi := bits.Add64(offset, i, 0)
	return hi<<62 | lo>>2, int(lo % 4)
}

// refCURAND is cuRAND's host ordering in closed form, one value at a time:
// value e is word e%4 of the block at counter (lo32(j/65536), hi32(j/65536),
// j%65536, 0) with j = e/4.
func refCURAND(seed, offset, i uint64) uint32 {
	j, w := blockIndex(offset, i)
	return Block([4]uint32{uint32(j >> 16), uint32(j >> 48), uint32(j % 65536), 0}, [2]uint32{uint32(seed), uint32(seed >> 32)})[w]
}

func refSequential(seed, offset, i uint64) uint32 {
	j, w := blockIndex(offset, i)
	return Block([4]uint32{uint32(j), uint32(j >> 32), 0, 0}, [2]uint32{uint32(seed), uint32(seed >> 32)})[w]
}

func TestFillsMatchClosedFormAtAnyOffsetAndLength(t *testing.T) {
	for _, tc := range []struct {
		seed, offset uint64
		n            int
	}{
		{0, 0, 0}, {0, 0, 1}, {42, 1, 3}, {42, 3, 5}, {7, 2, 11},
		{1 << 40, 4*65536 - 3, 17}, {^uint64(0), 1<<50 + 1, 9},
		{42, 5, parallelMin*3 + 7}, // parallel, unaligned at both ends
	} {
		t.Run(fmt.Sprintf("seed=%d/offset=%d/n=%d", tc.seed, tc.offset, tc.n), func(t *testing.T) {
			got := make([]uint32, tc.n)
			FillCURAND(got, tc.seed, tc.offset)
			seq := make([]uint32, tc.n)
			FillSequential(seq, tc.seed, tc.offset)
			for i := range got {
				if got[i] != refCURAND(tc.seed, tc.offset, uint64(i)) || seq[i] != refSequential(tc.seed, tc.offset, uint64(i)) {
					t.Fatalf("value %d differs from the closed form", i)
				}
			}
		})
	}
}

func TestParallelFillEqualsSingleThreaded(t *testing.T) {
	const n = 5*parallelMin + 13
	par := make([]uint32, n)
	FillCURAND(par, 99, 6)
	prev := runtime.GOMAXPROCS(1)
	one := make([]uint32, n)
	FillCURAND(one, 99, 6)
	runtime.GOMAXPROCS(prev)
	assert.Equal(t, one, par)
}

func TestConsecutiveFillsContinueTheStream(t *testing.T) {
	whole := make([]uint32, 1000)
	FillCURAND(whole, 5, 3)
	a, b := make([]uint32, 333), make([]uint32, 667)
	FillCURAND(a, 5, 3)
	FillCURAND(b, 5, 3+333)
	assert.Equal(t, whole, append(a, b...))
}

func TestStreamFollowsCurandInit(t *testing.T) {
	for _, tc := range []struct{ seed, subsequence, offset uint64 }{
		{0, 0, 0}, {42, 0, 0}, {42, 0, 3}, {42, 1, 0}, {42, 3, 7}, {^uint64(0), 1 << 40, 1<<63 + 5},
	} {
		s := NewStream(tc.seed, tc.subsequence, tc.offset)
		for m := range uint64(9) {
			// p = 2^66·subsequence + offset + m, as a 128-bit number.
			lo := tc.offset + m
			hi := tc.subsequence << 2
			if lo < tc.offset {
				hi++
			}
			j0, j1 := lo>>2|hi<<62, hi>>2
			want := Block([4]uint32{uint32(j0), uint32(j0 >> 32), uint32(j1), uint32(j1 >> 32)},
				[2]uint32{uint32(tc.seed), uint32(tc.seed >> 32)})[lo%4]
			require.Equal(t, want, s.Uint32(), "%+v m=%d", tc, m)
		}
	}
}

func TestStreamSkipsAndDrawsInFours(t *testing.T) {
	a := NewStream(42, 0, 0)
	b := NewStream(42, 0, 0)
	a.Skip(5)
	for range 5 {
		b.Uint32()
	}
	assert.Equal(t, b.Uint32x4(), a.Uint32x4())
	assert.Equal(t, b.Uint32(), a.Uint32())

	c := NewStream(42, 0, 0)
	c.SkipSubsequence(2)
	assert.Equal(t, NewStream(42, 2, 0).Uint32x4(), c.Uint32x4())

	seq := make([]uint32, 8)
	FillSequential(seq, 42, 0)
	d := NewStream(42, 0, 0)
	assert.Equal(t, [4]uint32(seq[:4]), d.Uint32x4())
	assert.Equal(t, [4]uint32(seq[4:]), d.Uint32x4())
}

func TestUniformMatchesCurandUniform(t *testing.T) {
	for _, tc := range []struct {
		x    uint32
		want float32
	}{
		{0, 1.0 / (1 << 33)},
		{1 << 31, 0.5 + 1.0/(1<<33)},
		{0xFFFFFF7F, 0.99999994},
		{0xFFFFFF80, 1},
		{0xFFFFFFFF, 1},
	} {
		assert.Equal(t, tc.want, Uniform(tc.x), "x=%#x", tc.x)
		assert.Greater(t, Uniform(tc.x), float32(0))
	}
}

// Near the end of the 64-bit stream position: cuRAND keeps counting past 2^64
// (libcurand 10.3's host generator, seed 42, measured here and compared live by
// device/cuda's oracle test), and so must every fill, on any number of cores.
func TestFillsKeepCountingPast2To64(t *testing.T) {
	const top = ^uint64(0) // 2^64-1
	t.Run("measured cuRAND values across 2^64", func(t *testing.T) {
		want := []uint32{0xda077909, 0xe9a084cc, 0x9109fe9c, 0x8cc53301, 0x646a54f6, 0x1e25daf1, 0x3c9b1129, 0x16086f9c}
		got := make([]uint32, len(want))
		FillCURAND(got, 42, top-3)
		assert.Equal(t, want, got)
	})
	for _, procs := range []int{1, 4} {
		for _, tc := range []struct {
			offset uint64
			n      int
		}{
			{top, 1}, {top, 9}, {top - 1, 3}, {top - 2, 7}, {top - 3, 4},
			{top - 1<<17, parallelMin*3 + 7}, // parallel, crossing 2^64
			{top - 5, parallelMin*2 + 1},
		} {
			t.Run(fmt.Sprintf("GOMAXPROCS=%d/offset=2^64-%d/n=%d", procs, top-tc.offset+1, tc.n), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				cur, seq := make([]uint32, tc.n), make([]uint32, tc.n)
				FillCURAND(cur, 7, tc.offset)
				FillSequential(seq, 7, tc.offset)
				for i := range tc.n {
					if cur[i] != refCURAND(7, tc.offset, uint64(i)) || seq[i] != refSequential(7, tc.offset, uint64(i)) {
						t.Fatalf("value %d differs from the closed form", i)
					}
				}
			})
		}
	}
	t.Run("a fill split in two equals one fill", func(t *testing.T) {
		whole := make([]uint32, 20)
		FillCURAND(whole, 3, top-9)
		a, b := make([]uint32, 6), make([]uint32, 14)
		FillCURAND(a, 3, top-9)
		FillCURAND(b, 3, top-9+6) // starts 4 values below 2^64 and crosses it
		assert.Equal(t, whole, append(a, b...))
	})
	t.Run("Stream agrees with FillSequential", func(t *testing.T) {
		seq := make([]uint32, 12)
		FillSequential(seq, 9, top)
		s := NewStream(9, 0, top)
		for i := range seq {
			require.Equal(t, seq[i], s.Uint32(), "value %d", i)
		}
	})
}
