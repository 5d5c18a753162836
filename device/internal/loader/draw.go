package loader

// MaxDrawValues is the most values one piece holds: 1 MiB of uint32.
const MaxDrawValues = 1 << 18

// DrawInPieces calls draw for dst in order, MaxDrawValues values at a time (the last
// piece may be shorter), and stops at the first error.
func DrawInPieces(dst []uint32, draw func(piece []uint32) error) error {
	for len(dst) > 0 {
		piece := dst[:min(len(dst), MaxDrawValues)]
		if err := draw(piece); err != nil {
			return err
		}
		dst = dst[len(piece):]
	}
	return nil
}
