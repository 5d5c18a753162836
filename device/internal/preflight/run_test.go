package preflight

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestTheDefaultChildMustServeThePreflight: a process that never called
// Serve would run its own main as the child (a second server, say): Run
// refuses that, saying what to do.
func TestTheDefaultChildMustServeThePreflight(t *testing.T) {
	was := served.Load()
	served.Store(false)
	defer served.Store(was)
	_, err := Run(context.Background(), Child{Backend: "cuda", Attempt: 1, Deadline: time.Second})
	if err == nil || !strings.Contains(err.Error(), "which does not serve the preflight") ||
		!strings.Contains(err.Error(), "device/backends") {
		t.Fatalf("err = %v", err)
	}
}

func TestLastLinesKeepsTheTail(t *testing.T) {
	if got := LastLines("a\n\nb\nc\n\n", 2); got != "b | c" {
		t.Errorf("LastLines = %q", got)
	}
}
