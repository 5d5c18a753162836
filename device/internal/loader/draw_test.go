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
