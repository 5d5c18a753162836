package health

import (
	"errors"
	"log/slog"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/watch"
	"github.com/gpuinit/gpuinit/lazy"
)

// observe reads the Runtime's Stats without copies, for a probe, and notes
// them.
func (h *Health) observe(snapshot bool) device.Stats { return h.note(h.stats(), snapshot) }

// note logs a change in st since the last Stats a probe or the status saw,
// once. States only move forward, so a probe that read an older state than
// another logs nothing. With snapshot, it also takes the snapshot once
// initialization has finished. Liveness does not, since that reads the
// backend's versions. It returns st.
func (h *Health) note(st device.Stats, snapshot bool) device.Stats {
	for old := h.observed.Load(); lazy.State(old) < st.State; old = h.observed.Load() {
		if h.observed.CompareAndSwap(old, int32(st.State)) {
			h.logChange(st)
			break
		}
	}
	for old := h.lost.Load(); int(old) < len(st.Lost); old = h.lost.Load() {
		if h.lost.CompareAndSwap(old, int32(len(st.Lost))) {
			h.log().Error("gpuinit: device lost", "lost", lostReason(st.Lost))
			break
		}
	}
	finished := st.State == lazy.Ready || st.State == lazy.Failed
	if snapshot && finished && h.snap.Load() == nil {
		h.snap.CompareAndSwap(nil, h.read(st))
	}
	if st.State == lazy.Ready {
		h.startCanary()
	}
	return st
}

// stats is the Runtime's Stats without copies, so that a probe allocates
// nothing. Its slices and maps are the Runtime's own: read them, never change
// them, and copy what the status keeps.
func (h *Health) stats() device.Stats {
	return watch.SharedStats[*device.Runtime, device.Stats](h.rt)
}

func (h *Health) logChange(st device.Stats) {
	log := h.log()
	took := st.Finished.Sub(st.Started)
	switch st.State {
	case lazy.Initializing:
		log.Info("gpuinit: initializing", "backend", h.rt.Name())
	case lazy.Ready:
		log.Info("gpuinit: ready", "backend", h.rt.Name(), "init", took)
	case lazy.Failed:
		v := h.verdict(st)
		switch {
		case !v.live:
			log.Error("gpuinit: initialization failed, not yet ready; liveness fails so that the process is restarted",
				"backend", h.rt.Name(), "class", v.class.String(), "init", took, "err", st.Err)
		case v.servesOnCPU:
			// A line to scan: the failing call and what the host showed. The
			// hint and the backends passed over are in the status.
			log.Warn("gpuinit: no GPU here; serving on the CPU (degraded)",
				"backend", h.rt.Name(), "class", v.class.String(), "init", took,
				"err", briefError(st.Err), "evidence", v.evidence, "details", StatusPath)
		default:
			log.Error("gpuinit: initialization failed; readiness fails, liveness does not: a restart cannot help",
				"backend", h.rt.Name(), "class", v.class.String(), "init", took, "err", st.Err)
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
// initializes anything: the Runtime has finished. A probe never reads
// versions from a driver, since HIP's version call would initialize HIP.
func (h *Health) read(st device.Stats) *snapshot {
	s := &snapshot{at: time.Now(), visibility: st.Visibility}
	s.driverVersion, _ = h.rt.DriverVersion()
	s.runtimeVersion, _ = h.rt.RuntimeVersion()
	if st.State == lazy.Ready {
		// From Stats, not Devices: after Shutdown only Stats answers.
		for _, d := range st.Devices {
			s.devices = append(s.devices, DeviceOf(d))
		}
	}
	return s
}

// briefError is err's driver call, name and code ("hip: hipInit failed:
// hipErrorInvalidDevice (101)") without its hint, or err itself where no
// driver answered.
func briefError(err error) string {
	var de *driver.DriverError
	if !errors.As(err, &de) {
		return err.Error()
	}
	brief := *de
	brief.Hint = ""
	return brief.Error()
}
