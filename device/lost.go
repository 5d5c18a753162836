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

// LossSource says who saw a device lost. A loss may also come from the
// driver's own verdict. It is then named by its health kind:
// "recovery-action", "row-remap", "fabric", "reset", "ring-hang".
type LossSource string

// The sources of a loss.
const (
	LossEngine   LossSource = "engine"   // the server's engine reported a sticky error
	LossDeadline LossSource = "deadline" // a call into the driver ran past the call deadline
	LossXid      LossSource = "xid"      // the driver raised an Xid that needs a reset or service
	LossECC      LossSource = "ecc"      // an uncorrectable ECC error
	LossRAS      LossSource = "ras"      // amdgpu's RAS counters of uncorrectable errors rose
	LossCanary   LossSource = "canary"   // the readiness canary's round trip failed
)

// ReportDriverCode classifies a raw driver code and records it as
// [Runtime.ReportError] does. The server's engine got the code from device
// ordinal in its own cgo call op (cuLaunchKernel, say).
//
// The classification is the backend's [driver.ErrorClassifier]. Failing
// that, it is its registration's Classify, which works before the driver is
// loaded. For auto before its choice, or a backend without either, the
// code's name is "unclassified". For code 0 (success), de is nil and nothing
// is recorded. err is ReportError's result.
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
// process. The first such error is kept. Anything else is counted.
// ReportError is safe for concurrent use. It never blocks on initialization
// and never calls into the backend.
//
// It returns nil when the report was recorded and the device is usable. It
// returns the device's [LostDevice], which wraps [ErrDeviceLost], when the
// device is lost, now or before. When ordinal names no device it records
// nothing and returns an error wrapping [ErrInvalidDevice]. A server reports
// errors of calls it made on a device the Runtime found. Until the driver's
// init has succeeded the devices are not known. The error then wraps
// [driver.ErrNotInitialized] too. After Shutdown, ReportError records nothing
// and returns [ErrClosed]. A nil err records nothing and reports whether the
// device is lost.
func (r *Runtime) ReportError(ordinal int, err error) error {
	if r.closed() {
		return ErrClosed
	}
	if cerr := r.checkOrdinal(ordinal); cerr != nil {
		if err == nil {
			return cerr
		}
		return &failure{msg: fmt.Sprintf("device: report not recorded (the error reported: %v): %s", err, strings.TrimPrefix(cerr.Error(), "device: ")),
			causes: []error{cerr, err}}
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

// lose marks device ordinal lost by source for de, unless it is already.
// It returns the device's loss.
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

// Error says which device was lost, when, who saw it, and the error. A
// LostDevice is an error wrapping ErrDeviceLost and that *DriverError.
func (l LostDevice) Error() string {
	return fmt.Sprintf("device %d lost at %s (%s): %v", l.Ordinal, l.At.Format(time.RFC3339), l.Source, l.Err)
}

// Unwrap returns ErrDeviceLost and the driver's error.
func (l LostDevice) Unwrap() []error { return []error{ErrDeviceLost, l.Err} }
