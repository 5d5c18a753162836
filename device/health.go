package device

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/internal/watch"
)

// DeviceHealth is what a Runtime knows of one device's health after init.
// It comes from the backend's health watch ([driver.HealthWatcher]):
// NVIDIA's Xid and ECC events and counters, or amdgpu's RAS counters.
type DeviceHealth struct {
	Ordinal int
	// Watched reports that the device's health events are watched. Where
	// they are not (no NVML, no event API, a backend without a watch), the
	// device's health is unknown, never "healthy". Why then says why.
	// A device is watched while any of its backend's sources watches it
	// (AMD: RAS counters, ROCm SMI events). Why then names those that do not.
	Watched bool
	Why     string
	// Counted are the events counted against the device, by kind and code
	// ("xid 13", "ecc corrected"). They leave it in service.
	Counted map[string]int64
	// Counters are the device's latest counters, where the watch reads
	// them.
	Counters *healthwatch.Counters
	// WatchError is the watch's failure, which it retries. It is "" once
	// the watch watches or reads again. WatchErrors counts the failures.
	WatchError  string
	WatchErrors int64
	// Hint is advice the counters call for, such as persistence mode
	// being off. It is "" when there is none.
	Hint string
	// UnwatchedCalls counts the calls into the device's driver that ran
	// without the call deadline's watch. The watch covers 64 calls at once
	// per device; these found that many already in flight.
	UnwatchedCalls int64

	// Verdict is the device's health in one word. Reason says why in a
	// sentence; it is "" when healthy. Since is when the verdict became so.
	// It is zero while the verdict has been unknown from the start.
	Verdict healthwatch.Verdict
	Reason  string
	Since   time.Time
	// Conditions are the driver's own verdicts that are not healthy. There
	// is one per kind, as its last event set it, most severe first.
	Conditions []healthwatch.Condition
	// Recovery is what the driver says the GPU needs: NVML's GPU recovery
	// action. It is [healthwatch.RecoveryUnknown] where the driver cannot say.
	Recovery healthwatch.RecoveryAction
	// ReplaysPerMinute is the PCIe replay rate over the last minute's
	// counter reads. It is 0 where the counter is not read.
	ReplaysPerMinute float64
	// Fabric is the GPU's fabric state where it has one (NVLink domains).
	Fabric *healthwatch.FabricState
	// Recovered is when the driver last said the device is usable again.
	// That is a reset: the recovery action back to none after a reset, a
	// row remap that a reset applied, or AMD's post-reset event. A fabric
	// healthy again, or a drain that ended, is not. It is zero if never.
	Recovered time.Time
	// HungCall names the health watch's driver call that is past its
	// deadline on the device, such as "nvmlEventSetWait_v2". It is "" when
	// there is none.
	HungCall string
}

// clone is h with its own copies of its map, slice and pointed-to structs.
func (h DeviceHealth) clone() DeviceHealth {
	h.Counted = maps.Clone(h.Counted)
	h.Conditions = slices.Clone(h.Conditions)
	if h.Fabric != nil {
		f := *h.Fabric
		h.Fabric = &f
	}
	if c := h.Counters; c != nil {
		h.Counters = &healthwatch.Counters{
			ECCEnabled: clonePtr(c.ECCEnabled), ECCCorrected: clonePtr(c.ECCCorrected),
			ECCUncorrected: clonePtr(c.ECCUncorrected), RowRemapsPending: clonePtr(c.RowRemapsPending),
			RowRemapFailed: clonePtr(c.RowRemapFailed), RetiredPages: clonePtr(c.RetiredPages),
			RetiredPagesPending: clonePtr(c.RetiredPagesPending), PCIeReplays: clonePtr(c.PCIeReplays),
			Persistence: clonePtr(c.Persistence), ThrottleReasons: slices.Clone(c.ThrottleReasons),
		}
	}
	return h
}

// clonePtr is a pointer to a copy of *p, or nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// settled reports whether the health watch has said something of the
// device: that it watches it and has read its counters (or failed to), or
// why it cannot. Until then the watch is starting.
func (h DeviceHealth) settled() bool {
	if h.Watched {
		return h.Counters != nil || h.WatchError != ""
	}
	return h.Why != watch.NotStarted
}

// view is what the Runtime publishes of its devices' health and losses. It
// is remade at each change and read without a lock. Nothing in it is
// modified.
type view struct {
	lost      []LostDevice
	health    []DeviceHealth
	counts    map[int]int64
	abandoned bool          // Shutdown abandoned the health watch
	changed   chan struct{} // closed when the next view replaces this one
}

// views serializes the remaking of the view. The last to remake it then
// reads the newest state.
type views struct{ mu sync.Mutex }

// republish remakes the view from the health watch.
func (r *Runtime) republish() {
	r.views.mu.Lock()
	defer r.views.mu.Unlock()
	w := r.watch.Load()
	if w == nil {
		return
	}
	now := w.Snapshot() // one moment: a loss and the event that lost it show together
	v := &view{counts: now.Counts, abandoned: now.Abandoned, changed: make(chan struct{})}
	for _, l := range now.Losses {
		v.lost = append(v.lost, lostDevice(l))
	}
	calls := r.calls.Load()
	for _, d := range now.Devices {
		h := DeviceHealth{Ordinal: d.Ordinal, Watched: d.Watched, Why: d.Why, Counted: d.Counted,
			Counters: d.Counters, WatchError: d.WatchError, WatchErrors: d.WatchErrors, Hint: d.Hint,
			Recovery: d.Recovery, ReplaysPerMinute: d.ReplaysPerMinute, Fabric: d.Fabric,
			Recovered: d.Recovered, HungCall: d.HungCall, Conditions: conditions(d.Conditions)}
		if calls != nil {
			h.UnwatchedCalls = calls.Unwatched(d.Ordinal)
		}
		h.Verdict, h.Reason = judge(h, v.lost)
		v.health = append(v.health, h)
	}
	old := r.view.Load()
	at := time.Now()
	for i := range v.health {
		h := &v.health[i]
		if i < len(old.health) && old.health[i].Verdict == h.Verdict {
			h.Since = old.health[i].Since
		} else if h.Verdict != healthwatch.VerdictUnknown || i < len(old.health) {
			h.Since = at
		}
	}
	close(r.view.Swap(v).changed)
}

// lostDevice is the public form of a loss.
func lostDevice(l watch.Loss) LostDevice {
	return LostDevice{Ordinal: l.Ordinal, Source: LossSource(l.Source), Err: l.Err, At: l.At}
}

// judge is a device's verdict and its reason. It is unhealthy once lost,
// and unknown while not watched. Otherwise it is the most severe of the
// driver's conditions, or healthy.
func judge(h DeviceHealth, lost []LostDevice) (healthwatch.Verdict, string) {
	for _, l := range lost {
		if l.Ordinal == h.Ordinal {
			why := "lost: " + l.Err.Error()
			if h.Recovered.After(l.At) {
				why += " (the driver reported it usable again at " + h.Recovered.Format(time.RFC3339) + ": a new process may use it)"
			}
			return healthwatch.VerdictUnhealthy, why
		}
	}
	if h.HungCall != "" {
		return healthwatch.VerdictUnknown, "the health watch's call " + h.HungCall + " is past its deadline"
	}
	if !h.Watched {
		return healthwatch.VerdictUnknown, h.Why
	}
	if len(h.Conditions) > 0 {
		c := h.Conditions[0]
		return c.Verdict, string(c.Kind) + ": " + c.Message
	}
	return healthwatch.VerdictHealthy, ""
}

// conditions is the public form of the watch's conditions.
func conditions(cs []watch.Condition) []healthwatch.Condition {
	if len(cs) == 0 {
		return nil
	}
	out := make([]healthwatch.Condition, len(cs))
	for i, c := range cs {
		v := healthwatch.VerdictDegraded
		if c.Level == watch.Unhealthy {
			v = healthwatch.VerdictUnhealthy
		}
		out[i] = healthwatch.Condition{Kind: c.Kind, Verdict: v, Message: c.Message, Hint: c.Hint, At: c.At}
	}
	return out
}

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
	de = r.driverError(op, code)
	return de, r.ReportError(ordinal, de)
}

// driverError is ReportDriverCode's reading of code: the backend's own
// table names it and says whether it is sticky.
func (r *Runtime) driverError(op string, code int) *DriverError {
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
