package childtest

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime is the process's user and system CPU time so far, for a child
// that measures what a quiet watch costs.
func CPUTime(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
