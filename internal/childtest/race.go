//go:build race

package childtest

import (
	"os"
	"strings"
)

// init spares each child a race-built test binary starts (a child test, a
// preflight child, a scenario) the race runtime's sleep of a second at exit
// (GORACE's atexit_sleep_ms), a wait for the reports of goroutines still
// running: the child's work is over by then, and its races were reported as
// they ran. This process's own runtime read GORACE before init; its children
// inherit the variable. A GORACE that names the setting already is kept.
// Every test binary that imports childtest gets it, and only those do.
func init() {
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
}

// raceBuilt reports that this test binary has the race detector.
const raceBuilt = true
