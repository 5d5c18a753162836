//go:build linux && cgo

package loader

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

// gpuinit_dl_open loads name (with noload, only if the process already has
// it) and reports the file loaded, or dlerror's text: read in this call,
// since dlerror is per thread and the goroutine may move between two.
static void *gpuinit_dl_open(const char *name, int noload, char *path, size_t pathlen, char *err, size_t errlen) {
	dlerror();
	void *h = dlopen(name, RTLD_NOW | (noload ? RTLD_NOLOAD : RTLD_LOCAL));
	if (!h) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen failed");
		return NULL;
	}
	struct link_map *m = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &m) == 0 && m && m->l_name && m->l_name[0])
		snprintf(path, pathlen, "%s", m->l_name);
	else
		snprintf(path, pathlen, "%s", name);
	return h;
}

// gpuinit_dl_sym resolves name in h, or gives dlerror's text.
static void *gpuinit_dl_sym(void *h, const char *name, char *err, size_t errlen) {
	dlerror();
	void *p = dlsym(h, name);
	if (!p) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "symbol not found");
	}
	return p;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Load finds and loads the library spec describes, in the package's order. A
// failure is a *driver.DriverError with Op "dlopen" wrapping
// driver.ErrDriverNotFound, the loader's own message and every name tried.
func Load(spec Spec) (Library, error) { return load(dl{}, spec) }

// Preloaded returns the library a name loads if this process has it already,
// without loading anything (RTLD_NOLOAD): one a cgo engine loaded.
func Preloaded(name string) (Library, bool) {
	h, path, _ := dl{}.Open(name, true)
	if h == nil {
		return Library{}, false
	}
	return Library{Handle: h, Path: path, Preloaded: true}, true
}

// Symbol returns the address of the function name in lib, or nil.
func (lib Library) Symbol(name string) unsafe.Pointer {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var msg [256]C.char
	return C.gpuinit_dl_sym(lib.Handle, cname, &msg[0], C.size_t(len(msg)))
}

// dl is the real dlopen.
type dl struct{}

func (dl) Open(name string, noload bool) (Handle, string, string) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var path, msg [1024]C.char
	noloadFlag := C.int(0)
	if noload {
		noloadFlag = 1
	}
	h := C.gpuinit_dl_open(cname, noloadFlag, &path[0], C.size_t(len(path)), &msg[0], C.size_t(len(msg)))
	if h == nil {
		return nil, "", GoString(unsafe.Pointer(&msg[0]), len(msg))
	}
	return h, GoString(unsafe.Pointer(&path[0]), len(path)), ""
}

// Symbol is one function a backend calls: its name in the library, where
// its pointer goes in the backend's C table (unsafe.Offsetof of the table's
// field), and whether the backend cannot do without it. An optional one
// missing stays NULL, which the backend's C side checks before calling.
type Symbol struct {
	Name     string
	Offset   uintptr
	Required bool
}

// Bind resolves syms in lib and stores each pointer at its offset in the C
// table at table, of size bytes: all or nothing, so that a library missing a
// required function leaves the table as it was. The missing function is a
// *driver.DriverError wrapping driver.ErrDriverMismatch that names it, with
// upgrade as the hint. Bind must be called before anything calls through
// the table, and only once for a table (the backends call it from their
// one-time load).
func (lib Library) Bind(spec Spec, syms []Symbol, table unsafe.Pointer, size uintptr, upgrade string) error {
	resolved := make([]unsafe.Pointer, len(syms))
	for i, s := range syms {
		if s.Offset+unsafe.Sizeof(uintptr(0)) > size {
			panic(fmt.Sprintf("dynload: %s's offset %d is outside its table of %d bytes", s.Name, s.Offset, size))
		}
		cname := C.CString(s.Name)
		var msg [256]C.char
		resolved[i] = C.gpuinit_dl_sym(lib.Handle, cname, &msg[0], C.size_t(len(msg)))
		C.free(unsafe.Pointer(cname))
		if resolved[i] == nil && s.Required {
			return missingSymbol(spec, lib, s.Name, GoString(unsafe.Pointer(&msg[0]), len(msg)), upgrade)
		}
	}
	for i, s := range syms {
		*(*unsafe.Pointer)(unsafe.Add(table, s.Offset)) = resolved[i]
	}
	return nil
}
