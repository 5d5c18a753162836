package lazy

import (
	"bytes"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// currentGoroutineID reads the running goroutine's id from the first line of its
// stack trace ("goroutine 42 [running]:"). It costs about a microsecond, so it is
// used only off the fast paths.
func currentGoroutineID() uint64 {
	var buf [64]byte
	stackMu.Lock()
	b := buf[:runtime.Stack(buf[:], false)]
	stackMu.Unlock()
	return parseGoroutineID(b)
}

// stackMu makes the stack traces of currentGoroutineID one at a time.
// runtime.Stack prints the whole stack, even into a short buffer, and takes the
// runtime's one print lock for each item it prints, spinning for it: goroutines
// that read their ids at once burned most of their time on that lock
// (BenchmarkCurrentGoroutineID). A sync.Mutex parks them instead.
var stackMu sync.Mutex

// parseGoroutineID reads the id from the first line of a stack trace.
func parseGoroutineID(b []byte) uint64 {
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if j := bytes.IndexByte(b, ' '); j >= 0 {
		b = b[:j]
	}
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		panic("lazy: cannot read the goroutine id from runtime.Stack: " + err.Error())
	}
	return id
}

// goStatementSite names the go statement that started the running goroutine,
// as "file.go:line go statement in function", from the "created by" lines of
// its stack trace. Go offers no cheaper way; it runs only for a Call made
// directly by a go statement.
func goStatementSite() string {
	buf := stacks(false)
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	for k, line := range lines {
		fn, ok := strings.CutPrefix(line, "created by ")
		if !ok || k+1 == len(lines) {
			continue
		}
		fn, _, _ = strings.Cut(fn, " in goroutine ")
		where := strings.TrimSpace(lines[k+1])
		where, _, _ = strings.Cut(where, " +0x")
		return filepath.Base(where) + " go statement in " + fn
	}
	return "unknown call site (a go statement)"
}

// stacks is runtime.Stack's whole output: the calling goroutine's, or with all
// every goroutine's.
func stacks(all bool) []byte {
	buf := make([]byte, 8<<10)
	for {
		n := runtime.Stack(buf, all)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}
