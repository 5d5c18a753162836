package health

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/lazy"
)

// Status serves the Runtime's status as JSON ([StatusSchema]). It holds:
//   - the state, and readiness and liveness with their reasons;
//   - the backend, versions and devices, read once, when initialization
//     finished;
//   - lost devices with their errors;
//   - the initialization's timeline: what it runs now and for how long,
//     while it runs;
//   - its failure: code, name, hint, and the call site of failed queued
//     work.
//
// Status answers 200 whatever the state, and never blocks. It reports
// readiness, so with auto-init (the default) it starts Init as readiness
// does.
func (h *Health) Status() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		s, st := h.snapshot()
		h.writeStatus(w, s, st)
	})
}

// Snapshot is the status Status serves, at one moment. Every field agrees
// with State. A failure, a finish time and devices come only once the
// initialization has finished. Losses and health come only once it
// succeeded. Readiness agrees with the losses listed. Snapshot reads again
// while the state or the losses move on, four times at most. Under a storm
// of losses the last read is served as it is.
func (h *Health) Snapshot() Status {
	s, _ := h.snapshot()
	return s
}

// snapshot is Snapshot, with the stats it was read from.
func (h *Health) snapshot() (Status, device.Stats) {
	// The state can move on while the rest is read. States only move
	// forward, so reading until the state before and after agree ends
	// within a few rounds. Each field is then taken only if its state has
	// it. Losses only grow too. Readiness and the list of losses agree when
	// the count held still across the read.
	// It reads Stats with their copies: the Status is the caller's to keep.
	st := h.note(h.rt.Stats(), true)
	for range 4 {
		s := h.snapshotAt(st)
		now := h.stats()
		if now.State == st.State && len(now.Lost) == len(st.Lost) {
			return s, st
		}
		st = h.note(h.rt.Stats(), true)
	}
	return h.snapshotAt(st), st
}

// snapshotAt reads the status as of st.
func (h *Health) snapshotAt(st device.Stats) Status {
	ready, readyReason := h.readiness(st)
	live, liveReason := h.liveness(st)
	s := Status{Schema: StatusSchema, State: st.State.String(), Ready: ready, Live: live,
		Backend: h.rt.Name(), Devices: []Device{}}
	switch {
	case !live:
		s.Reason = liveReason
	case !ready:
		s.Reason = readyReason
	}
	if st.State == lazy.Failed {
		// The failure says the error once; the reason says what it means.
		if s.Reason = h.verdict(st).statusWhy; !live {
			s.Reason = "initialization failed for a reason expected to clear (not-yet): a restart may succeed"
		}
	}
	if !st.Started.IsZero() && st.State != lazy.Uninitialized {
		started := st.Started
		s.Init.Started = &started
	}
	finishedState := st.State == lazy.Ready || st.State == lazy.Failed
	if snap := h.snap.Load(); snap != nil && finishedState {
		s.DriverVersion, s.RuntimeVersion, s.Visibility = snap.driverVersion, snap.runtimeVersion, maps.Clone(snap.visibility)
		at := snap.at
		s.ReadAt, s.AgeSeconds = &at, time.Since(at).Seconds()
	}
	if !st.Finished.IsZero() && finishedState {
		finished := st.Finished
		s.Init.Finished = &finished
		s.Init.DurationMillis = float64(st.Finished.Sub(st.Started).Microseconds()) / 1000
	}
	switch st.State {
	case lazy.Initializing:
		if st.Running != "" {
			s.Init.Running, s.Init.RunningSeconds = st.Running, time.Since(st.RunningSince).Seconds()
		}
	case lazy.Ready:
		h.addDevices(&s, st)
	case lazy.Failed:
		s.Failure = ErrorOf(st.Err)
		var nb *device.NoBackendError
		if errors.As(st.Err, &nb) {
			lead := nb.Lead().Backend
			for _, f := range nb.Tried {
				if f.Backend != lead {
					s.PassedOver = append(s.PassedOver, PassedOver{Backend: f.Backend, DriverVersion: f.DriverVersion, Error: ErrorOf(f.Err)})
				}
			}
		}
		s.Class = device.ClassOf(st.Err).String()
		s.Degraded = h.verdict(st).servesOnCPU
	}
	if b := st.BringUp; (b.Attempts > 0 || b.Phase != "") && st.State != lazy.Uninitialized {
		s.BringUp = BringUpOf(b)
		if st.State == lazy.Failed {
			// The failure says it once, above: the last attempt's is the same.
			s.BringUp.LastError = nil
		}
	}
	s.Closed = st.Closed
	return s
}

// addDevices adds a Ready runtime's devices as they are now. It adds their
// health, losses and reported errors.
func (h *Health) addDevices(s *Status, st device.Stats) {
	if snap := h.snap.Load(); snap != nil && snap.devices != nil {
		s.Devices = slices.Clone(snap.devices)
	}
	for i := range s.Devices {
		o := s.Devices[i].Ordinal
		if o >= 0 && o < len(st.Health) {
			s.Devices[i].Health = DeviceHealthOf(st.Health[o])
		}
		if h.rt.CheckDevice(o) == nil {
			if m, ok := h.freeMemory(o); ok {
				s.Devices[i].FreeMemory, s.Devices[i].MemorySource = &m.Free, string(m.Source)
			}
		}
	}
	h.addCanaries(s)
	for _, l := range st.Lost {
		s.Lost = append(s.Lost, Lost{Ordinal: l.Ordinal, Source: string(l.Source), Error: ErrorOf(l), At: l.At})
	}
	if len(st.ErrorCounts) > 0 {
		s.ErrorsReported = maps.Clone(st.ErrorCounts)
	}
	for _, d := range st.FailedCalls {
		e := ErrorOf(d)
		e.Class = "" // the call's own failure: no initialization failed
		s.FailedCalls = append(s.FailedCalls, e)
	}
	s.MoreFailedCalls = st.MoreFailedCalls
}

// BringUpOf is b as JSON, in the layout gpuprobe's report shares.
func BringUpOf(b device.BringUp) *BringUp {
	out := &BringUp{Phase: string(b.Phase), Backend: b.Backend, Preflight: b.Preflight, Attempts: b.Attempts}
	if out.Phase == "" {
		out.Phase = "done" // nothing runs: the initialization is over
	}
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
