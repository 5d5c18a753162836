package lazy

import (
	"errors"
	"fmt"
	"strings"
)

// ErrReentrantInit is returned by Init when it is called from inside the init
// function (through its context or on its goroutine): waiting there for the
// initialization to finish would wait forever.
var ErrReentrantInit = errors.New("lazy: Init called from inside the init function; it cannot wait for itself")

// ErrGoexit is the error recorded when init or a queued function calls
// runtime.Goexit (t.FailNow, for one) instead of returning.
var ErrGoexit = errors.New("function called runtime.Goexit instead of returning")

// InitError is the memoized error of an init function that failed, panicked or
// called runtime.Goexit. Every later Init returns it, and Call wraps it.
type InitError struct {
	Err    error    // what init returned, a *PanicError, or ErrGoexit
	NotRun []string // call sites ("file.go:line function") of queued functions that never ran
}

// Error says that initialization failed, why, and which queued calls never ran.
func (e *InitError) Error() string {
	return "lazy: initialization failed: " + e.Err.Error() + notRunText(e.NotRun)
}

// Unwrap returns the init function's error.
func (e *InitError) Unwrap() error { return e.Err }

// DeferredError is the memoized error of a queued function that failed, panicked
// or called runtime.Goexit when it ran after init. The functions queued after it
// did not run; NotRun lists them.
type DeferredError struct {
	Site   string   // "file.go:line function" of the Call that queued the failing function
	Err    error    // what it returned, a *PanicError, or ErrGoexit
	NotRun []string // call sites of the functions queued after it, which never ran
}

// Error names the call site that queued the failing function, the cause, and
// the queued calls that never ran.
func (e *DeferredError) Error() string {
	return "lazy: call queued at " + e.Site + " failed lazily at initialization: " + e.Err.Error() + notRunText(e.NotRun)
}

// Unwrap returns the queued function's error.
func (e *DeferredError) Unwrap() error { return e.Err }

// PanicError is a panic recovered from init or a queued function, with the stack
// of the goroutine where it happened.
type PanicError struct {
	Value any
	Stack []byte
}

// Error gives the panic value; the stack is in Stack.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error, so that errors.Is and
// errors.As see through a panic(err).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// maxSitesInMessage bounds how many never-run call sites an error message lists;
// the NotRun fields keep them all.
const maxSitesInMessage = 8

func notRunText(sites []string) string {
	switch n := len(sites); {
	case n == 0:
		return ""
	case n == 1:
		return "; 1 queued call never ran: " + sites[0]
	case n > maxSitesInMessage:
		return fmt.Sprintf("; %d queued calls never ran: %s and %d more", n,
			strings.Join(sites[:maxSitesInMessage], ", "), n-maxSitesInMessage)
	default:
		return fmt.Sprintf("; %d queued calls never ran: %s", n, strings.Join(sites, ", "))
	}
}
