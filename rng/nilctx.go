package rng

import "context"

// nilContext panics, naming the method the user called, when ctx is nil: a
// nil Context is a programming error, as net/http treats one, and the panic
// should say where it is.
func nilContext(ctx context.Context, method string) {
	if ctx == nil {
		panic("rng: Generators." + method + " called with a nil Context")
	}
}
