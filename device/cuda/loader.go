//go:build linux && cgo && !nocuda

package cuda

/*
#cgo LDFLAGS: -ldl
#include "dl.h"
*/
import "C"

import (
	"unsafe"

	"github.com/gpuinit/gpuinit/device/internal/dynload"
)

// cLoader is dynload's view of this package's dlopen.
type cLoader struct{}

func (cLoader) Open(name string, noload bool) (dynload.Handle, string, string) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var path, msg [1024]C.char
	noloadFlag := C.int(0)
	if noload {
		noloadFlag = 1
	}
	h := C.gpuinit_dl_open(cname, noloadFlag, &path[0], C.size_t(len(path)), &msg[0], C.size_t(len(msg)))
	if h == nil {
		return nil, "", C.GoString(&msg[0])
	}
	return h, C.GoString(&path[0]), ""
}
