package loader

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestInPiecesCoversDstInBoundedPiecesInOrder(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []int
	}{
		{0, nil},
		{5, []int{5}},
		{MaxDrawValues, []int{MaxDrawValues}},
		{2*MaxDrawValues + 8, []int{MaxDrawValues, MaxDrawValues, 8}},
	} {
		dst := make([]uint32, tc.n)
		var sizes []int
		next := uint32(0)
		assert.NoError(t, DrawInPieces(dst, func(piece []uint32) error {
			sizes = append(sizes, len(piece))
			for i := range piece {
				piece[i] = next
				next++
			}
			return nil
		}))
		assert.Equal(t, tc.want, sizes, "n=%d", tc.n)
		for i, v := range dst {
			if v != uint32(i) {
				t.Fatalf("n=%d: dst[%d] = %d: the pieces are not dst in order", tc.n, i, v)
			}
		}
	}
}

func TestInPiecesStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	err := DrawInPieces(make([]uint32, 3*MaxDrawValues), func([]uint32) error { calls++; return boom })
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, 1, calls)
}

// fakeMemory is device memory whose pointers are numbers, with a record of
// what was allocated and freed, and a failure to give.
type fakeMemory struct{}

var fakeMem struct {
	next      int
	allocs    []int // sizes
	frees     []int // pointers
	failAlloc bool
}

func (fakeMemory) Alloc(bytes int) (int, error) {
	if fakeMem.failAlloc {
		return 0, errors.New("out of memory")
	}
	fakeMem.next++
	fakeMem.allocs = append(fakeMem.allocs, bytes)
	return fakeMem.next, nil
}

func (fakeMemory) Free(p int) error {
	fakeMem.frees = append(fakeMem.frees, p)
	return nil
}

func TestADeviceBufferGrowsOnlyWhenADrawNeedsMore(t *testing.T) {
	fakeMem.next, fakeMem.allocs, fakeMem.frees, fakeMem.failAlloc = 0, nil, nil, false
	var b DeviceBuffer[int, fakeMemory]
	assert.NoError(t, b.Release(), "an empty buffer frees nothing")
	p, err := b.Grow(64)
	assert.NoError(t, err)
	assert.Equal(t, 1, p)
	p, _ = b.Grow(16)
	assert.Equal(t, 1, p, "a smaller draw reuses the buffer")
	p, _ = b.Grow(128)
	assert.Equal(t, 2, p, "a larger one gets a new buffer")
	assert.Equal(t, []int{64, 128}, fakeMem.allocs)
	assert.Equal(t, []int{1}, fakeMem.frees, "the old one freed first")
	fakeMem.failAlloc = true
	_, err = b.Grow(256)
	assert.Error(t, err)
	assert.Equal(t, []int{1, 2}, fakeMem.frees, "freed before the failed allocation")
	assert.NoError(t, b.Release(), "after a failure the buffer holds none")
	assert.Equal(t, []int{1, 2}, fakeMem.frees, "nothing freed twice")
}
