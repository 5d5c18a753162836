package hangcheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGoroutinesKeepsWholeFramesAroundAnElisionNote(t *testing.T) {
	dump := "goroutine 7 [sync.Mutex.Lock]:\n" +
		"runtime.gopark(0x0?)\n\t/go/src/runtime/proc.go:435 +0xce\n" +
		"github.com/gpuinit/gpuinit/lazy.(*Initializer).lock(...)\n\t/src/lazy/lazy.go:300\n" +
		"...additional frames elided...\n" +
		"runtime.goexit({})\n\t/go/src/runtime/asm_amd64.s:1700 +0x1\n" +
		"created by main.main in goroutine 1\n\t/src/main.go:12 +0x25\n" +
		"\n" +
		"goroutine 8 [select]:\n" +
		"net/http.(*conn).serve(0x0)\n\t/go/src/net/http/server.go:2100\n"
	want := "goroutine 7 [sync.Mutex.Lock]:\n" +
		"github.com/gpuinit/gpuinit/lazy.(*Initializer).lock(...)\n\t/src/lazy/lazy.go:300\n" +
		"...additional frames elided...\n" +
		"created by main.main in goroutine 1\n\t/src/main.go:12 +0x25"
	assert.Equal(t, want, Goroutines(dump, 10, "gpuinit/"), "the runtime frame after the note is dropped whole")
}
