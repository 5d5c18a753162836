package health

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gpuinit/gpuinit/device"
)

// Status serves the Runtime's status as JSON (StatusSchema): state,
// readiness and liveness with their reasons, backend, versions and devices (read
// once, when initialization finished), lost devices with their errors, the
// initialization's timeline (what it runs now and for how long, while it
// runs), and its failure (code, name, hint, and the call site of failed queued
// work). It answers 200 whatever the state, and never blocks; with auto-init
// (the default) it starts Init as readiness does, since it reports readiness.
func (h *Health) Status() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(h.Snapshot())
	})
}

// Snapshot is the status Status serves.
func (h *Health) Snapshot() Status {
	// One read of the state, so that state, ready and live agree.
	state := h.observe(true)
	ready, readyReason := h.readiness(state)
	live, liveReason := h.liveness(state)
	s := Status{Schema: StatusSchema, State: state.String(), Ready: ready, Live: live,
		Backend: h.rt.Name(), Devices: []Device{}, ErrorsReported: h.rt.ErrorCounts()}
	switch {
	case !live:
		s.Reason = liveReason
	case !ready:
		s.Reason = readyReason
	}
	if len(s.ErrorsReported) == 0 {
		s.ErrorsReported = nil
	}
	if snap := h.snap.Load(); snap != nil {
		s.DriverVersion, s.RuntimeVersion, s.Visibility = snap.driverVersion, snap.runtimeVersion, snap.visibility
		if snap.devices != nil {
			s.Devices = snap.devices
		}
		at := snap.at
		s.ReadAt, s.AgeSeconds = &at, time.Since(at).Seconds()
	}
	for _, l := range h.rt.Lost() {
		s.Lost = append(s.Lost, Lost{Ordinal: l.Ordinal, Error: ErrorOf(l), At: l.At})
	}
	started, finished := h.rt.InitTimes()
	if !started.IsZero() {
		s.Init.Started = &started
	}
	if !finished.IsZero() {
		s.Init.Finished = &finished
		s.Init.DurationMillis = float64(finished.Sub(started).Microseconds()) / 1000
	}
	if what, since, ok := h.rt.Running(); ok {
		s.Init.Running, s.Init.RunningSeconds = what, time.Since(since).Seconds()
	}
	if err := h.rt.Err(); err != nil {
		s.Failure = ErrorOf(err)
		s.Class = device.ClassOf(err).String()
		s.Degraded = h.cpuFallback
		if h.cpuFallback && ready {
			s.Reason = readyReason
		}
	}
	if b := h.rt.BringUp(); b.Phase != device.PhaseNone {
		s.BringUp = BringUpOf(b)
	}
	return s
}

// BringUpOf is b as JSON, in the layout gpuprobe's report shares.
func BringUpOf(b device.BringUp) *BringUp {
	out := &BringUp{Phase: string(b.Phase), Backend: b.Backend, Preflight: b.Preflight, Attempts: b.Attempts}
	if !b.Since.IsZero() {
		since := b.Since
		out.Since = &since
	}
	if !b.InProcess.IsZero() {
		in := b.InProcess
		out.InProcess = &in
	}
	if !b.Next.IsZero() {
		next := b.Next
		out.NextAttempt = &next
	}
	if b.LastErr != nil {
		out.LastError, out.LastClass = ErrorOf(b.LastErr), b.LastClass.String()
	}
	return out
}
