//go:build race && linux && cgo && !nohip

package hip

import (
	"os"
	"strings"
)

// raceEnabled: the race detector's hooks in syscall.Read allocate.
const raceEnabled = true

// init spares each child this test binary starts (every case runs in one)
// the race runtime's sleep of a second at exit (GORACE's atexit_sleep_ms),
// a wait for the reports of goroutines still running: the child's tests
// are over by then, and its races were reported as they ran. This
// process's own runtime read GORACE before init; its children inherit it.
func init() {
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
}
