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

// load loads the library spec describes and resolves syms into the C table
// at table (size bytes), all or nothing: the sequence every vendor library
// goes through. A missing required function is a *device.DriverError wrapping
// device.ErrDriverMismatch that names it, with upgrade as the hint.
func load(spec dynload.Spec, syms *C.struct_gpuinit_symbol, nsyms int, table unsafe.Pointer, size uintptr, upgrade string) (dynload.Library, error) {
	lib, err := dynload.Load(cLoader{}, spec)
	if err != nil {
		return lib, err
	}
	var name, text [256]C.char
	if C.gpuinit_dl_bind(lib.Handle, syms, C.size_t(nsyms), table, C.size_t(size),
		&name[0], C.size_t(len(name)), &text[0], C.size_t(len(text))) != 0 {
		return lib, dynload.MissingSymbol(spec.Backend, lib, C.GoString(&name[0]), C.GoString(&text[0]), upgrade)
	}
	return lib, nil
}
