package loader

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

func TestGoStringReadsNoFurtherThanItsBound(t *testing.T) {
	for _, tc := range []struct {
		name string
		buf  []byte
		n    int
		want string
	}{
		{"NUL-terminated", []byte("H200\x00garbage"), 12, "H200"},
		{"no NUL: cut at the buffer's end", []byte("0123456789ABCDEF"), 8, "01234567"},
		{"empty", []byte{0, 'x'}, 2, ""},
		{"bound of zero", []byte("abc"), 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, GoString(unsafe.Pointer(&tc.buf[0]), tc.n))
		})
	}
	assert.Equal(t, "", GoString(nil, 10))
}
