package philox

import "testing"

// go test -run '^$' -bench FillCURAND ./rng/philox
// (with -tags cuda, device/cuda has libcurand's host generator on the same sizes)
func BenchmarkFillCURAND(b *testing.B) {
	dst := make([]uint32, 1<<20)
	b.Run("one-core", func(b *testing.B) {
		b.SetBytes(int64(4 * len(dst)))
		for b.Loop() {
			fillRange(dst, 42, at(0, 0), curandCounter)
		}
	})
	b.Run("all-cores", func(b *testing.B) {
		b.SetBytes(int64(4 * len(dst)))
		for b.Loop() {
			FillCURAND(dst, 42, 0)
		}
	})
}
