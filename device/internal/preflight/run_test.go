package preflight

import (
	"context"
	"errors"
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

// TestTheDeadlineCountsFromTheCheck: a child whose start takes longer than
// its deadline (a loaded machine's fork, exec and package inits) is not
// hung: its deadline counts from its ArmedLine. The line is the parent's
// marker, left out of the stderr Run reports.
func TestTheDeadlineCountsFromTheCheck(t *testing.T) {
	slowStart := "sleep 0.3; echo '" + ArmedLine + "' >&2; echo 'the driver said no' >&2; exit 3"
	_, err := Run(context.Background(), Child{Command: []string{"sh", "-c", slowStart}, Backend: "cuda", Attempt: 1,
		Deadline: 100 * time.Millisecond})
	var na *NoAnswer
	if !errors.As(err, &na) {
		t.Fatalf("err = %v, want a *NoAnswer", err)
	}
	if na.Hung || na.ExitCode != 3 {
		t.Errorf("Hung = %v, ExitCode = %d: want the child's own exit 3, not a hang at the deadline", na.Hung, na.ExitCode)
	}
	if strings.Contains(na.Stderr, ArmedLine) || !strings.Contains(na.Stderr, "the driver said no") {
		t.Errorf("Stderr = %q: want the child's words without the marker", na.Stderr)
	}
	if wait := MaxWait(time.Second); wait != startBound+time.Second+Beyond {
		t.Errorf("MaxWait(1s) = %v: want the start bound, the deadline and Beyond", wait)
	}
}
