package device

import (
	"os"
	"strings"
	"testing"
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
