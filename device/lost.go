package device

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ErrDeviceLost is wrapped by the error a lost device's reports carry: the
// device reported a sticky error and is unusable for the rest of the process.
var ErrDeviceLost = errors.New("device: device lost")

// ErrorClassifier is implemented by backends that can turn a raw code from a
// server's own driver calls into a *DriverError: its name, hint, sentinel and
// whether it is sticky (CUDA 700, 719, 214 and the like leave the context
// unusable; HIP has the equivalents).
type ErrorClassifier interface {
	DriverError(op string, code int) *DriverError
}

// LostDevice is a device that reported a sticky error.
type LostDevice struct {
	Ordinal int
	Err     *DriverError // the first sticky error it reported
	At      time.Time
}

// lostDevices is the Runtime's record of reported errors.
type lostDevices struct {
	// devices is the lost devices by ordinal, never modified once stored:
	// readiness checks read it without a lock. Writers hold mu.
	devices atomic.Pointer[[]LostDevice]
	mu      sync.Mutex    // protects counts, and serializes writers of devices
	counts  map[int]int64 // non-sticky errors reported, by ordinal
}

// list returns the lost devices, sorted by ordinal; the caller must not
// modify it.
func (l *lostDevices) list() []LostDevice {
	if p := l.devices.Load(); p != nil {
		return *p
	}
	return nil
}

// has reports whether device ordinal is lost.
func (l *lostDevices) has(ordinal int) bool {
	return slices.ContainsFunc(l.list(), func(d LostDevice) bool { return d.Ordinal == ordinal })
}

// ReportDriverCode records a raw driver code that the server's engine got
// from device ordinal in its own cgo call op (cuLaunchKernel, say). The
// backend classifies it (an ErrorClassifier); a sticky code marks the device
// lost for the rest of the process, any other is counted. It returns the
// classified error, for the server's log.
func (r *Runtime) ReportDriverCode(ordinal int, op string, code int) *DriverError {
	var de *DriverError
	if c, ok := Capability[ErrorClassifier](r.Backend()); ok {
		de = c.DriverError(op, code)
	} else {
		de = &DriverError{Backend: r.Name(), Op: op, Code: code, Name: "unclassified"}
	}
	r.ReportError(ordinal, de)
	return de
}

// ReportError records an error that an operation on device ordinal returned.
// A *DriverError marked Sticky marks the device lost for the rest of the
// process (the first such error is kept); anything else is counted. It
// reports whether the device is lost now. Safe from many goroutines; it never
// blocks on initialization and never calls into the backend.
func (r *Runtime) ReportError(ordinal int, err error) (lost bool) {
	if err == nil {
		return r.lost.has(ordinal)
	}
	var de *DriverError
	sticky := errors.As(err, &de) && de.Sticky
	r.lost.mu.Lock()
	defer r.lost.mu.Unlock()
	if r.lost.has(ordinal) {
		return true
	}
	if !sticky {
		if r.lost.counts == nil {
			r.lost.counts = map[int]int64{}
		}
		r.lost.counts[ordinal]++
		return false
	}
	devices := append(slices.Clone(r.lost.list()), LostDevice{Ordinal: ordinal, Err: de, At: time.Now()})
	slices.SortFunc(devices, func(a, b LostDevice) int { return a.Ordinal - b.Ordinal })
	r.lost.devices.Store(&devices)
	return true
}

// Lost lists the devices lost so far, by ordinal, in a slice of the caller's.
// It takes no lock and never touches the backend.
func (r *Runtime) Lost() []LostDevice { return slices.Clone(r.lost.list()) }

// LostCount reports how many devices are lost, without a lock or allocation.
func (r *Runtime) LostCount() int { return len(r.lost.list()) }

// AnyLost reports whether any device is lost, without a lock or allocation.
func (r *Runtime) AnyLost() bool { return r.LostCount() > 0 }

// ErrorCounts reports how many non-sticky errors were reported per device.
func (r *Runtime) ErrorCounts() map[int]int64 {
	r.lost.mu.Lock()
	defer r.lost.mu.Unlock()
	out := make(map[int]int64, len(r.lost.counts))
	for k, v := range r.lost.counts {
		out[k] = v
	}
	return out
}

// Error says which device was lost, when, and the driver's error; a
// LostDevice is an error wrapping ErrDeviceLost and that *DriverError.
func (l LostDevice) Error() string {
	return fmt.Sprintf("device %d lost at %s: %v", l.Ordinal, l.At.Format(time.RFC3339), l.Err)
}

// Unwrap returns ErrDeviceLost and the driver's error.
func (l LostDevice) Unwrap() []error { return []error{ErrDeviceLost, l.Err} }
