// Package drawbuf bounds the device buffer a generator draws into. A draw of
// more than MaxValues values runs in pieces of MaxValues, a multiple of 4,
// which continue the Philox stream exactly (cuRAND and rocRAND advance a
// generator by what it generates), so that one large draw does not keep its
// size of GPU memory from the server's engine until the generator is closed.
package drawbuf

// MaxValues is the most values one piece holds: 1 MiB of uint32.
const MaxValues = 1 << 18

// InPieces calls draw for dst in order, MaxValues values at a time (the last
// piece may be shorter), and stops at the first error.
func InPieces(dst []uint32, draw func(piece []uint32) error) error {
	for len(dst) > 0 {
		piece := dst[:min(len(dst), MaxValues)]
		if err := draw(piece); err != nil {
			return err
		}
		dst = dst[len(piece):]
	}
	return nil
}
