package device

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
)

// LostDevice is a device that is unusable for the rest of the process, and
// why.
type LostDevice struct {
	Ordinal int
	Source  LossSource   // who saw it lost
	Err     *DriverError // the first error that lost it
	At      time.Time
}

// LossSource says who saw a device lost. Beside the sources below, a loss
// the driver's own verdict made is named by its health kind:
// "recovery-action", "row-remap", "fabric", "reset", "ring-hang".
type LossSource string

// The sources of a loss.
const (
	LossEngine   LossSource = "engine"   // the server's engine reported a sticky error (ReportError)
	LossDeadline LossSource = "deadline" // a call into the driver ran past the call deadline
	LossXid      LossSource = "xid"      // the driver raised an Xid that needs a reset or service
	LossECC      LossSource = "ecc"      // an uncorrectable ECC error
	LossRAS      LossSource = "ras"      // amdgpu's RAS counters of uncorrectable errors rose
	LossCanary   LossSource = "canary"   // the readiness canary's round trip failed
)

// ReportDriverCode classifies a raw driver code that the server's engine got
// from device ordinal in its own cgo call op (cuLaunchKernel, say), and
// records it as ReportError does. The classification is the backend's: its
// driver.ErrorClassifier, else its registration's Classify, which works
// before the driver is loaded; for auto before its choice, or a backend
// without either, the code's name is "unclassified". de is nil for code 0
// (success), which records nothing. err is ReportError's result.
func (r *Runtime) ReportDriverCode(ordinal int, op string, code int) (de *DriverError, err error) {
	if code == 0 {
		return nil, nil
	}
	de = r.classify(op, code)
	return de, r.ReportError(ordinal, de)
}

// classify is ReportDriverCode's classification of code.
func (r *Runtime) classify(op string, code int) *DriverError {
	reg := r.Registration()
	if b := r.Backend(); b != nil {
		if c, ok := driver.Capability[driver.ErrorClassifier](b); ok {
			return c.DriverError(op, code)
		}
	} else if !r.auto {
		reg = r.candidates[0]
	}
	if reg.Classify != nil {
		return reg.Classify(op, code)
	}
	return &DriverError{Backend: r.Name(), Op: op, Code: code, Name: "unclassified",
		Message: "no classifier: auto has not chosen a backend, or the backend has none"}
}

// ReportError records an error that an operation on device ordinal returned.
// A *DriverError marked Sticky marks the device lost for the rest of the
// process (the first such error is kept); anything else is counted. Safe from
// many goroutines; it never blocks on initialization and never calls into the
// backend.
//
// It returns nil when the report was recorded and the device is usable; the
// device's LostDevice (which wraps ErrDeviceLost) when it is lost, now or
// before; and, recording nothing, an error wrapping ErrInvalidDevice when
// ordinal names no device, which before the devices are known (until the
// driver's init has succeeded) wraps driver.ErrNotInitialized too: a server reports
// errors of calls it made on a device the Runtime found. A nil err records
// nothing and reports whether the device is lost.
func (r *Runtime) ReportError(ordinal int, err error) error {
	if r.stop.closed.Load() {
		return ErrClosed
	}
	if cerr := r.checkOrdinal(ordinal); cerr != nil {
		if err == nil {
			return cerr
		}
		return &causes{msg: fmt.Sprintf("device: report not recorded: %s (the error reported: %v)", strings.TrimPrefix(cerr.Error(), "device: "), err),
			errs: []error{cerr, err}}
	}
	if lost, ok := r.findLost(ordinal); ok || err == nil {
		if ok {
			return lost
		}
		return nil
	}
	var de *DriverError
	if errors.As(err, &de) && de.Sticky {
		return r.lose(ordinal, LossEngine, de)
	}
	r.count(ordinal)
	return nil
}

// count counts a non-sticky error against device ordinal.
func (r *Runtime) count(ordinal int) {
	if w := r.watch.Load(); w != nil {
		w.Count(ordinal)
	}
}

// lose marks device ordinal lost by source for de, unless it is already;
// it returns the device's loss.
func (r *Runtime) lose(ordinal int, source LossSource, de *DriverError) LostDevice {
	w := r.watch.Load()
	if w == nil { // no devices yet: nothing to lose
		return LostDevice{Ordinal: ordinal, Source: source, Err: de, At: time.Now()}
	}
	return lostDevice(w.Lose(ordinal, string(source), de))
}

// findLost returns device ordinal's loss, if it is lost, without a lock or
// an allocation.
func (r *Runtime) findLost(ordinal int) (LostDevice, bool) {
	for _, l := range r.view.Load().lost {
		if l.Ordinal == ordinal {
			return l, true
		}
	}
	return LostDevice{}, false
}

// Error says which device was lost, when, who saw it, and the error; a
// LostDevice is an error wrapping ErrDeviceLost and that *DriverError.
func (l LostDevice) Error() string {
	return fmt.Sprintf("device %d lost at %s (%s): %v", l.Ordinal, l.At.Format(time.RFC3339), l.Source, l.Err)
}

// Unwrap returns ErrDeviceLost and the driver's error.
func (l LostDevice) Unwrap() []error { return []error{ErrDeviceLost, l.Err} }
