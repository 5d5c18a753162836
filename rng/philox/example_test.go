package philox_test

import (
	"fmt"
	"slices"

	"github.com/gpuinit/gpuinit/rng/philox"
)

// Block is the permutation everything else is built on: four 32-bit outputs
// for one 128-bit counter under a 64-bit key. These are Random123's known
// answers for Philox4x32-10.
func ExampleBlock() {
	fmt.Printf("%08x\n", philox.Block([4]uint32{}, [2]uint32{}))
	fmt.Printf("%08x\n", philox.Block(
		[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
		[2]uint32{0xffffffff, 0xffffffff}))
	// Output:
	// [6627e8d5 e169c58d bc57ac4c 9b00dbd8]
	// [408f276d 41c83b0e a20bc7c6 6d5451fd]
}

// FillCURAND writes what curandGenerate writes for a seed and offset. A fill
// continues where the last one ended when the offset moves by the values
// drawn, so a draw can be split anywhere.
func ExampleFillCURAND() {
	whole := make([]uint32, 8)
	philox.FillCURAND(whole, 42, 0)

	split := make([]uint32, 8)
	philox.FillCURAND(split[:3], 42, 0)
	philox.FillCURAND(split[3:], 42, 3)

	fmt.Printf("%08x\n", whole)
	fmt.Println("same:", slices.Equal(whole, split))
	// Output:
	// [9ceaf053 77f5493b 12bf50ad 5742b3d7 02933769 2051e913 3b68b038 b62c409c]
	// same: true
}

// FillSequential is rocRAND's host stream: one sequential stream, where
// cuRAND's interleaves 65536 subsequences. The two agree on the first four
// values, then part.
func ExampleFillSequential() {
	curand := make([]uint32, 8)
	rocrand := make([]uint32, 8)
	philox.FillCURAND(curand, 42, 0)
	philox.FillSequential(rocrand, 42, 0)
	fmt.Printf("cuRAND:  %08x\n", curand)
	fmt.Printf("rocRAND: %08x\n", rocrand)
	// Output:
	// cuRAND:  [9ceaf053 77f5493b 12bf50ad 5742b3d7 02933769 2051e913 3b68b038 b62c409c]
	// rocRAND: [9ceaf053 77f5493b 12bf50ad 5742b3d7 fcdb2127 53ba6cfd 838f5a6e 744e06fb]
}

// A Stream draws what one device thread draws after curand_init. Its
// subsequence 0 is FillSequential's stream; Skip and SkipSubsequence move it
// as skipahead and skipahead_sequence do.
func ExampleNewStream() {
	s := philox.NewStream(42, 0, 0)
	fmt.Printf("curand4: %08x\n", s.Uint32x4())
	fmt.Printf("curand:  %08x\n", s.Uint32())

	host := make([]uint32, 5)
	philox.FillSequential(host, 42, 0)
	fmt.Printf("host:    %08x\n", host)

	s = philox.NewStream(42, 0, 0)
	s.Skip(4)
	fmt.Printf("skipped: %08x\n", s.Uint32())

	// Subsequence 1 at offset 5 is where this stream now is.
	s.SkipSubsequence(1)
	there := philox.NewStream(42, 1, 5)
	fmt.Println("same:", s.Uint32() == there.Uint32())
	fmt.Printf("uniform: %.6f\n", s.Uniform())
	// Output:
	// curand4: [9ceaf053 77f5493b 12bf50ad 5742b3d7]
	// curand:  fcdb2127
	// host:    [9ceaf053 77f5493b 12bf50ad 5742b3d7 fcdb2127]
	// skipped: fcdb2127
	// same: true
	// uniform: 0.105636
}

// Uniform maps a 32-bit value into (0, 1] as curand_uniform does: 0 never
// comes out, 1 does.
func ExampleUniform() {
	fmt.Println(philox.Uniform(0))
	fmt.Println(philox.Uniform(1 << 31))
	fmt.Println(philox.Uniform(0xFFFFFF80))
	fmt.Println(philox.Uniform(0xFFFFFFFF))
	// Output:
	// 1.1641532e-10
	// 0.5
	// 1
	// 1
}
