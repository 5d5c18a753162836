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

// DeviceMemory allocates and frees a backend's device memory on the current
// device: Ptr is its device pointer type. Its zero value is used.
type DeviceMemory[Ptr any] interface {
	Alloc(bytes int) (Ptr, error)
	Free(Ptr) error
}

// DeviceBuffer is a generator's device memory for its draws. It is kept
// between draws, since an allocation per draw costs more than the draw, and
// grown as needed, up to MaxDrawValues values. Its zero value is empty. It
// is not safe for concurrent use, as its generator is not.
type DeviceBuffer[Ptr any, M DeviceMemory[Ptr]] struct {
	ptr  Ptr
	size int // in bytes; 0 while it holds none
}

// Grow returns the buffer, of at least bytes: the one it holds where that
// is large enough, or else a new one, once the old is freed. The device must
// be current. A failure leaves it holding none.
func (b *DeviceBuffer[Ptr, M]) Grow(bytes int) (Ptr, error) {
	if bytes <= b.size {
		return b.ptr, nil
	}
	if err := b.Release(); err != nil {
		return b.ptr, err
	}
	var m M
	ptr, err := m.Alloc(bytes)
	if err != nil {
		return ptr, err
	}
	b.ptr, b.size = ptr, bytes
	return ptr, nil
}

// Release frees the buffer, if it holds one; the device must be current.
// It holds none after, even where the free failed.
func (b *DeviceBuffer[Ptr, M]) Release() error {
	if b.size == 0 {
		return nil
	}
	b.size = 0
	var m M
	return m.Free(b.ptr)
}
