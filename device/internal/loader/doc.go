// Package loader loads a backend's vendor libraries and runs its one-time
// initialization.
//
// Load finds a vendor library at run time, in the order and with the errors
// the backends share: the file an environment variable names, else a library
// the process already has (a cgo engine may have loaded one: two copies of a
// GPU runtime in one process break both), else the directories the backend
// prefers (hipRAND next to the libamdhip64 in use), else the dynamic loader's
// own search (LD_LIBRARY_PATH, the cache), else the usual install
// directories. It then binds the functions a backend calls from a Go-side
// symbol list into the backend's C table of function pointers, all or
// nothing, as go-nvml's pkg/dl does for its own use. The search order is pure
// Go, over an opener that tests replace. Libraries are never closed.
//
// OnceFunc and OnceValue run the backend's one-time initialization as
// sync.OnceValue does, except that a panic is memoized as an error: every
// caller, the first included, gets a *lazy.PanicError with the panic's value
// and stack. A driver's init that panicked is never mistaken for success, and
// never panics again in the next caller's goroutine.
//
// DrawInPieces bounds the device buffer a generator of the library draws
// into. A draw of more than MaxDrawValues values runs in pieces of
// MaxDrawValues, a multiple of 4, which continue the Philox stream exactly
// (cuRAND and rocRAND advance a generator by what it generates). One large
// draw then does not keep its size of GPU memory from the server's engine
// until the generator is closed.
//
// It is the one cgo package besides the backends, which keep only their C
// tables and trampolines.
package loader
