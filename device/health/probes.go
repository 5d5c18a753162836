package health

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/lazy"
)

// losses is the reason readiness gives for count lost devices.
type losses struct {
	count  int
	reason string
}

// verdict is what the probes answer about a failed initialization. It holds
// the class and the probes' reasons, made once.
type verdict struct {
	class             device.Class
	live              bool
	servesOnCPU       bool // WithCPUFallback, and the host has no GPU
	liveWhy, readyWhy string
	statusWhy         string // readyWhy without the error: the status says it once, in failure
	evidence          string // what the host showed that decided the class, or ""
}

// The reasons that never change.
const (
	startedReason    = "initializing: a probe started it"
	notStartedReason = "not initialized: nothing has used the GPU yet, and probes do not start it"
	closedReason     = "shut down: the runtime was shut down"
)

// Readiness reports whether the Runtime can serve now, and if not, why. With
// auto-init (the default) the first call starts Init in the background. It
// never blocks. After the Runtime's Shutdown it reports not ready.
func (h *Health) Readiness() (ready bool, reason string) { return h.readiness(h.observe(true)) }

func (h *Health) readiness(st device.Stats) (ready bool, reason string) {
	if st.Closed {
		return false, closedReason
	}
	switch st.State {
	case lazy.Ready:
		if len(st.Lost) > 0 {
			return false, h.lostReason(st.Lost)
		}
		if h.degradedNotReady {
			for _, d := range st.Health {
				if d.Verdict == healthwatch.VerdictDegraded {
					return false, fmt.Sprintf("device %d degraded: %s", d.Ordinal, d.Reason)
				}
			}
		}
		return true, ""
	case lazy.Uninitialized:
		if h.autoInit && h.startInit() {
			return false, startedReason
		}
		return false, notStartedReason
	case lazy.Initializing:
		if st.BringUp.Summary != "" {
			return false, st.BringUp.Summary
		}
		return false, startedReason
	}
	v := h.verdict(st)
	return v.servesOnCPU, v.readyWhy
}

// Liveness reports whether the process can still become or stay useful. If
// not, it says why a restart can help. It reads the Runtime's state only.
func (h *Health) Liveness() (live bool, reason string) { return h.liveness(h.observe(false)) }

func (h *Health) liveness(st device.Stats) (live bool, reason string) {
	switch st.State {
	case lazy.Failed:
		v := h.verdict(st)
		if !v.live {
			// Not yet: a restart helps once the GPU has had the init
			// deadline to come up, not before. A fresh process would only
			// fail the same way, and the orchestrator's restarts back off.
			// Without a deadline, never: nothing fails for time.
			if h.deadline <= 0 || time.Since(st.Started) <= h.deadline {
				return true, ""
			}
		}
		return v.live, v.liveWhy
	case lazy.Initializing:
		if b := st.BringUp; h.deadline > 0 && !b.InProcess.IsZero() && time.Since(b.InProcess) > h.deadline {
			return false, fmt.Sprintf("the in-process initialization has run for %s, past its deadline of %s: the process is wedged; %s",
				time.Since(b.InProcess).Round(time.Millisecond), h.deadline, runningReason(st))
		}
	case lazy.Ready:
		if h.restartOnLoss && len(st.Lost) > 0 {
			return false, "restart on device loss: " + h.lostReason(st.Lost)
		}
	}
	return true, ""
}

// verdict returns the probes' answers about the failed initialization. They
// are made at the first call.
func (h *Health) verdict(st device.Stats) *verdict {
	if v := h.failed.Load(); v != nil {
		return v
	}
	err := st.Err
	class := device.ClassOf(err)
	v := &verdict{class: class, live: class != device.ClassNotYet, servesOnCPU: h.cpuFallback && device.FallBackToCPU(err)}
	why := class.Describe()
	var ev interface{ Evidence() string }
	if errors.As(err, &ev) && ev.Evidence() != "" {
		why, v.evidence = ev.Evidence(), ev.Evidence()
	}
	prefix := ""
	if v.servesOnCPU {
		prefix = "degraded: serving without a GPU: "
	}
	v.statusWhy = fmt.Sprintf("%sinitialization failed (%s: %s)", prefix, class, why)
	// err holds the evidence.
	v.readyWhy = fmt.Sprintf("%sinitialization failed (%s: %s): %v", prefix, class, class.Describe(), err)
	if !v.live {
		v.liveWhy = "initialization failed for a reason expected to clear (not-yet): a restart may succeed: " + err.Error()
	}
	h.failed.CompareAndSwap(nil, v)
	return h.failed.Load()
}

// runningReason says what the initialization runs now.
func runningReason(st device.Stats) string {
	s := st.BringUp.Summary
	if st.Running != "" && st.Running != "init" {
		s += fmt.Sprintf("; running %s for %s", st.Running, time.Since(st.RunningSince).Round(time.Millisecond))
	}
	return s
}

// lostReason is readiness's reason for the lost devices. It is remade only
// when their number changes.
func (h *Health) lostReason(lost []device.LostDevice) string {
	n := len(lost)
	if l := h.lossSeen.Load(); l != nil && l.count == n {
		return l.reason
	}
	l := &losses{count: n, reason: lostReason(lost)}
	h.lossSeen.Store(l)
	return l.reason
}

func lostReason(lost []device.LostDevice) string {
	s := fmt.Sprintf("%d device(s) lost", len(lost))
	for _, l := range lost {
		s += "; " + l.Error()
	}
	return s
}
