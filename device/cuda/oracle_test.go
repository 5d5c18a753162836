//go:build linux && cgo && !nocuda

package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/require"
)

// hostGenerator is cuRAND's host generator, or a skip where libcurand cannot
// be loaded (CI's cuda leg puts Debian's libcurand 10.3 on the loader path).
func hostGenerator(tb testing.TB) *Generator {
	tb.Helper()
	g, err := NewHostGenerator()
	if errors.Is(err, device.ErrNotSupported) {
		tb.Skip("no libcurand here to compare with:", err)
	}
	require.NoError(tb, err)
	return g
}

// canary fills the buffers, so that values libcurand leaves unwritten show.
const canary = 0xAAAAAAAA

// TestFillCURANDMatchesLibcurand compares rng/philox with the real libcurand's
// host Philox generator, which runs on the CPU: many seeds, offsets that are
// not multiples of 4, lengths past 4·65536 (where cuRAND's interleaved
// subsequences wrap) and not multiples of 4, and consecutive generate calls.
//
// libcurand 10.3.0.86 has a quirk this test allows for: the first
// curandGenerate after curandSetGeneratorOffset(O), O a non-zero multiple of 4,
// writes only the first n&^3 of n values, leaves the rest of the buffer
// untouched, and advances the stream by n&^3 only. Other versions may not; the
// canary tells which happened, and every value written must be FillCURAND's.
// (rng.Generators only ever asks for multiples of 4.)
func TestFillCURANDMatchesLibcurand(t *testing.T) {
	for _, seed := range []uint64{0, 1, 42, 0xDEADBEEF, 1 << 32, 0x123456789ABCDEF0, ^uint64(0)} {
		for _, offset := range []uint64{0, 1, 2, 3, 4, 5, 262143, 262145, 1<<32 + 3} {
			for _, lengths := range [][]int{{1}, {7}, {4*65536 + 13}, {3, 5, 1000, 4*65536 + 1}} {
				t.Run(fmt.Sprintf("seed=%#x/offset=%d/lengths=%v", seed, offset, lengths), func(t *testing.T) {
					g := hostGenerator(t)
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
						if k == 0 && offset != 0 && offset%4 == 0 && untouched(got[n&^3:]) {
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

// untouched reports whether every value still holds the canary.
func untouched(values []uint32) bool {
	for _, v := range values {
		if v != canary {
			return false
		}
	}
	return len(values) > 0
}

// TestFillsPast2To64MatchLibcurand covers stream positions within 2^17 of
// 2^64, where a 64-bit position would wrap: libcurand keeps counting, and
// rng/philox must too, on one core and on several.
func TestFillsPast2To64MatchLibcurand(t *testing.T) {
	const top = ^uint64(0)
	for _, procs := range []int{1, 4} {
		for _, tc := range []struct {
			offset uint64
			n      int
		}{
			{top - 3, 8}, {top - 1<<17, 1<<17 + 4*65536 + 13}, {top - 1<<16 + 1, 3 * 65536}, {top - 7, 4*65536 + 1},
		} {
			t.Run(fmt.Sprintf("GOMAXPROCS=%d/offset=2^64-%d/n=%d", procs, top-tc.offset+1, tc.n), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				g := hostGenerator(t)
				defer g.Close()
				require.NoError(t, g.SetSeed(42))
				require.NoError(t, g.SetOffset(tc.offset))
				// Draw whole blocks: libcurand 10.3 may write only n&^3 values of
				// the first draw after a multiple-of-4 offset.
				n := tc.n
				if tc.offset%4 == 0 {
					n &^= 3
				}
				got := make([]uint32, n)
				require.NoError(t, g.Generate(got))
				want := make([]uint32, n)
				philox.FillCURAND(want, 42, tc.offset)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("value %d: libcurand %#08x, philox %#08x", i, got[i], want[i])
					}
				}
			})
		}
	}
}

// go test -run '^$' -bench Fill ./device/cuda (with libcurand on the loader
// path, or GPUINIT_CURAND_LIBRARY naming it)
func BenchmarkFill(b *testing.B) {
	dst := make([]uint32, 1<<20)
	b.Run("libcurand-host", func(b *testing.B) {
		g := hostGenerator(b)
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
