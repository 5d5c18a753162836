package device

import (
	"os"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver"
)

// TestREADMEPrintsTheClassTable keeps the README's table of failure classes
// the one in the code, row for row.
func TestREADMEPrintsTheClassTable(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), classTable()) {
		t.Errorf("README.md does not print the class table as the code has it; paste this in:\n\n%s", classTable())
	}
}

// TestTheDefaultChildMustServeThePreflight: a process that never called
// ServePreflight would run its own main as the child (a second server, say):
// the preflight refuses that, saying what to do.
func TestTheDefaultChildMustServeThePreflight(t *testing.T) {
	was := servesPreflight.Load()
	servesPreflight.Store(false)
	defer servesPreflight.Store(was)
	_, err := runPreflight(t.Context(), Preflight{}.withDefaults(), driver.Registration{Name: "cuda"}, 1)
	if err == nil || !strings.Contains(err.Error(), "which does not serve the preflight") ||
		!strings.Contains(err.Error(), "device/backends") {
		t.Fatalf("err = %v", err)
	}
	if ClassOf(&classified{err: err, class: classOf(failure{err: err})}) != NeedsOperator {
		t.Errorf("class %v, want needs-operator", classOf(failure{err: err}))
	}
}
