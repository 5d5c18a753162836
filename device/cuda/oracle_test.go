//go:build cuda && cgo

package cuda

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/require"
)

// canary fills the buffers, so that values libcurand leaves unwritten show.
const canary = 0xAAAAAAAA

// TestFillCURANDMatchesLibcurand compares rng/philox with the real libcurand's
// host Philox generator, which runs on the CPU: many seeds, offsets that are
// not multiples of 4, lengths past 4·65536 (where cuRAND's interleaved
// subsequences wrap) and not multiples of 4, and consecutive generate calls.
//
// libcurand 10.3.0.86 has a quirk this test pins down: the first
// curandGenerate after curandSetGeneratorOffset(O), O a non-zero multiple of 4,
// writes only the first n&^3 of n values, leaves the rest of the buffer
// untouched, and advances the stream by n&^3 only. Every value it does write is
// FillCURAND's. (rng.Generators only ever asks for multiples of 4.)
func TestFillCURANDMatchesLibcurand(t *testing.T) {
	for _, seed := range []uint64{0, 1, 42, 0xDEADBEEF, 1 << 32, 0x123456789ABCDEF0, ^uint64(0)} {
		for _, offset := range []uint64{0, 1, 2, 3, 4, 5, 262143, 262145, 1<<32 + 3} {
			for _, lengths := range [][]int{{1}, {7}, {4*65536 + 13}, {3, 5, 1000, 4*65536 + 1}} {
				t.Run(fmt.Sprintf("seed=%#x/offset=%d/lengths=%v", seed, offset, lengths), func(t *testing.T) {
					g, err := NewHostGenerator()
					require.NoError(t, err)
					defer g.Close()
					require.NoError(t, g.SetSeed(seed))
					require.NoError(t, g.SetOffset(offset))
					pos := offset
					for k, n := range lengths {
						got := make([]uint32, n)
						for i := range got {
							got[i] = canary
						}
						require.NoError(t, g.Generate(got))
						written := n
						if k == 0 && offset != 0 && offset%4 == 0 {
							written = n &^ 3 // the quirk
						}
						want := make([]uint32, n)
						philox.FillCURAND(want[:written], seed, pos)
						for i := written; i < n; i++ {
							want[i] = canary
						}
						for i := range got {
							if got[i] != want[i] {
								t.Fatalf("call of %d values at stream position %d: value %d should be %#08x, libcurand wrote %#08x", n, pos, i, want[i], got[i])
							}
						}
						pos += uint64(written)
					}
				})
			}
		}
	}
}

// go test -tags cuda -run '^$' -bench Fill ./device/cuda
func BenchmarkFill(b *testing.B) {
	dst := make([]uint32, 1<<20)
	b.Run("libcurand-host", func(b *testing.B) {
		g, err := NewHostGenerator()
		require.NoError(b, err)
		defer g.Close()
		require.NoError(b, g.SetSeed(42))
		b.SetBytes(int64(4 * len(dst)))
		for b.Loop() {
			require.NoError(b, g.SetOffset(0))
			require.NoError(b, g.Generate(dst))
		}
	})
	b.Run("philox-one-core", func(b *testing.B) {
		prev := runtime.GOMAXPROCS(1)
		defer runtime.GOMAXPROCS(prev)
		b.SetBytes(int64(4 * len(dst)))
		for b.Loop() {
			philox.FillCURAND(dst, 42, 0)
		}
	})
	b.Run("philox-all-cores", func(b *testing.B) {
		b.SetBytes(int64(4 * len(dst)))
		for b.Loop() {
			philox.FillCURAND(dst, 42, 0)
		}
	})
}
