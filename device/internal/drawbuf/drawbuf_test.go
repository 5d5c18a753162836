package drawbuf

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
		{MaxValues, []int{MaxValues}},
		{2*MaxValues + 8, []int{MaxValues, MaxValues, 8}},
	} {
		dst := make([]uint32, tc.n)
		var sizes []int
		next := uint32(0)
		assert.NoError(t, InPieces(dst, func(piece []uint32) error {
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
	err := InPieces(make([]uint32, 3*MaxValues), func([]uint32) error { calls++; return boom })
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, 1, calls)
}
