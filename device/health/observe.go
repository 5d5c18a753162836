package health

import (
	"context"
	"log/slog"
	"time"

	"github.com/gpuinit/gpuinit/lazy"
)

// observe reads the Runtime's state and logs a change since the last one it
// saw, once: states only move forward, so a probe that read an older state
// than another logs nothing. With snapshot, it also takes the snapshot once
// initialization has finished; liveness does not, since that reads the
// backend's versions.
func (h *Health) observe(snapshot bool) lazy.State {
	state := h.rt.State()
	for old := h.observed.Load(); lazy.State(old) < state; old = h.observed.Load() {
		if h.observed.CompareAndSwap(old, int32(state)) {
			h.logChange(state)
			break
		}
	}
	for old := h.lost.Load(); int(old) < h.rt.LostCount(); old = h.lost.Load() {
		if lost := h.rt.Lost(); h.lost.CompareAndSwap(old, int32(len(lost))) {
			h.log().Error("gpuinit: device lost", "lost", lostReason(lost))
			break
		}
	}
	if snapshot && (state == lazy.Ready || state == lazy.Failed) && h.snap.Load() == nil {
		h.snap.CompareAndSwap(nil, h.read(state))
	}
	if state == lazy.Ready {
		h.startCanary()
	}
	return state
}

func (h *Health) logChange(state lazy.State) {
	log := h.log()
	started, finished := h.rt.InitTimes()
	switch state {
	case lazy.Initializing:
		log.Info("gpuinit: initializing", "backend", h.rt.Name())
	case lazy.Ready:
		log.Info("gpuinit: ready", "backend", h.rt.Name(), "init", finished.Sub(started))
	case lazy.Failed:
		v := h.verdict()
		switch {
		case !v.live:
			log.Error("gpuinit: initialization failed, not yet ready; liveness fails so that the process is restarted",
				"backend", h.rt.Name(), "class", v.class.String(), "init", finished.Sub(started), "err", h.rt.Err())
		case v.servesOnCPU:
			log.Warn("gpuinit: initialization failed; serving without a GPU (degraded)",
				"backend", h.rt.Name(), "class", v.class.String(), "init", finished.Sub(started), "err", h.rt.Err())
		default:
			log.Error("gpuinit: initialization failed; readiness fails, liveness does not: a restart cannot help",
				"backend", h.rt.Name(), "class", v.class.String(), "init", finished.Sub(started), "err", h.rt.Err())
		}
	}
}

func (h *Health) log() *slog.Logger {
	if h.logger != nil {
		return h.logger
	}
	return slog.Default()
}

// read takes the snapshot: versions and devices, read once. Neither call
// initializes anything: the Runtime has finished, and versions are never read
// from a driver by a probe (HIP's version call would initialize HIP).
func (h *Health) read(state lazy.State) *snapshot {
	s := &snapshot{at: time.Now(), visibility: h.rt.Visibility()}
	s.driverVersion, _ = h.rt.DriverVersion()
	s.runtimeVersion, _ = h.rt.RuntimeVersion()
	if state == lazy.Ready {
		devices, _ := h.rt.Devices(context.Background()) // Ready: returns at once
		for _, d := range devices {
			s.devices = append(s.devices, DeviceOf(d))
		}
	}
	return s
}
