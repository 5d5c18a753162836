package loader

import "unsafe"

// GoString returns the NUL-terminated C string at p, reading at most n bytes
// and none past the NUL: for a buffer of n bytes that a driver filled (one
// that wrote no NUL gives an n-byte string, never a read past the buffer, as
// C.GoString would do), and for a string the driver owns, bounded by n. A nil
// p is "".
func GoString(p unsafe.Pointer, n int) string {
	if p == nil {
		return ""
	}
	size := 0
	for size < n && *(*byte)(unsafe.Add(p, size)) != 0 {
		size++
	}
	return string(unsafe.Slice((*byte)(p), size))
}

// MaxMessage bounds the driver-owned strings a backend reads: error names
// and descriptions.
const MaxMessage = 1024
