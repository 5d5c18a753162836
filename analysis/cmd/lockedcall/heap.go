package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
)

// startHeapSize is the heap a vet run of one package grows to before its
// first collection: most packages never need that much, so most runs never
// collect. It is about the memory plain go vet's largest package (the
// runtime) takes.
const startHeapSize = 64 << 20

// startHeap lets the heap grow to size before the first collection, and
// collects as GOGC=100 does from then on. go vet runs the tool once per
// package, each run short and its heap garbage when it exits; from the
// collector's default start of 4 MiB, a run that builds 50 MB of syntax,
// types and SSA collects nine times, which cost a quarter to a third of the tool's
// CPU. A package that outgrows size is collected as before, so the peak is
// the larger of size and what it was. cmd/compile starts its heap large for
// the same reason. GOGC or GOMEMLIMIT in the environment wins: nothing
// changes then.
func startHeap(size int64) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(size)
	// The first collection comes when the heap reaches size. The sentinel
	// dies then, and its cleanup, run once that collection has swept it,
	// hands the heap back to GOGC=100. It holds pointers so that it is not
	// a tiny allocation, which shares its block and may never be freed.
	sentinel := new([2]*byte)
	runtime.AddCleanup(sentinel, func(struct{}) {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	}, struct{}{})
}
