//go:build linux && cgo && !nocuda

package cuda

/*
#include <stdlib.h>
#include "nvml_shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
)

// The NVML event types the watch registers for.
const (
	eventSingleBitECC = 0x1
	eventDoubleBitECC = 0x2
	eventXid          = 0x8
	// eventUnavailable and eventRecovery exist from NVML 12.8 (R570); an
	// older driver does not list them as supported, and is not asked for them.
	eventUnavailable = 0x4000 // nvmlEventTypeGpuUnavailableError
	eventRecovery    = 0x8000 // nvmlEventTypeGpuRecoveryAction
	watchedEvents    = eventSingleBitECC | eventDoubleBitECC | eventXid | eventUnavailable | eventRecovery
	// xidRecovery is Xid 154: the GPU's recovery action changed.
	xidRecovery = 154
)

const (
	nvmlNotSupported = 3
	nvmlTimeout      = 10
)

// watchTiming paces the health watch. wait bounds one nvmlEventSetWait_v2:
// the watch blocks in it, using no CPU, and looks at its context between
// two (so a Runtime's Close waits for it no longer than this, unless NVML
// hangs, when Close abandons it when its ctx ends). counters is how often
// the counters are read again. backoff is the first wait after a failure,
// doubling up to maxBackoff.
type watchTiming struct {
	wait, counters, backoff, maxBackoff time.Duration
}

// productionTiming is every Backend's, unless a test gave its own.
var productionTiming = watchTiming{wait: time.Second, counters: 30 * time.Second, backoff: time.Second, maxBackoff: 30 * time.Second}

// watchTiming is b's timing: productionTiming unless a test set its own.
func (b *Backend) watchTiming() watchTiming {
	if b != nil && b.timing != nil {
		return *b.timing
	}
	return productionTiming
}

// WatchHealth watches the devices' NVML events (Xid critical errors, single-
// and double-bit ECC, the GPU's unavailability and its recovery action)
// until ctx ends: an Xid is classified by NVIDIA's Xid catalog
// (device/internal/drivercodes: one that needs a reset, a reboot or service loses
// the device, an application's error is counted); a double-bit ECC error
// loses the device and a single-bit one is counted; a GPU-unavailable event
// loses it (healthwatch.KindReset). Each device's counters (ECC mode and
// counts, row remapping, retired pages and whether a retirement is pending,
// persistence mode, clock throttle reasons, PCIe replays) are read at the
// start and every 30 s, with the driver's own verdicts: the GPU recovery
// action (also on its event and on Xid 154), the row remapping as a verdict,
// and the fabric state (nvml_verdict.go, nvml_fabric.go). Each is reported
// when it changes; one the driver cannot say is not reported. Devices are
// matched to events by their NVML handle, looked up by UUID, never by
// index. A device that cannot register for events (Jetson, some vGPU) is
// reported unwatched: its health is unknown. Where NVML cannot be loaded or
// has no event API the watch returns an error wrapping
// driver.ErrNotSupported at once. An NVML error while waiting is reported
// and the watch starts again after a backoff of 1 s, doubling to 30 s while
// it fails again before a wait succeeds, and back to 1 s once one has; it
// loses no device. Each NVML call is made on the calling goroutine, marked
// by healthwatch.TrackCall with ctx (with the device's ordinal, or -1), and may
// block in the driver: a wait returns within a second, but on a dead GPU
// any call may never return, and then neither does WatchHealth (the
// Runtime's CallTracker names the call past its deadline, and its Close
// abandons the watch when its ctx ends).
func (b *Backend) WatchHealth(ctx context.Context, report func(healthwatch.Event)) error {
	end := healthwatch.TrackCall(ctx, -1, "nvmlInit_v2")
	handles, err := loadNVML()
	end()
	if err != nil {
		return drivercodes.Unusable("cuda", "NVML (libnvidia-ml.so.1) cannot be used, so the devices' health is not watched", err, driver.ErrNotSupported)
	}
	if C.gpuinit_nvmlHasEvents() == 0 {
		return fmt.Errorf("cuda: this NVML has no event API, so the devices' health is not watched: %w", driver.ErrNotSupported)
	}
	w := &nvmlWatch{ctx: ctx, report: report, timing: b.watchTiming(), devices: map[int]*nvmlVerdicts{}}
	backoff := w.timing.backoff
	for {
		waited, err := w.once(handles)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, driver.ErrNotSupported) {
			return err
		}
		if waited { // it watched again: this failure is a new one
			backoff = w.timing.backoff
		}
		report(healthwatch.Event{Ordinal: -1, Kind: healthwatch.KindWatchError, At: time.Now(),
			Message: fmt.Sprintf("%v; watching again in %s", err, backoff)})
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil
		}
		backoff = min(2*backoff, w.timing.maxBackoff)
	}
}

// nvmlWatch is one WatchHealth's state: its ctx, for TrackCall, and what it
// last reported of each device's verdicts, kept across restarts of the watch
// so that only changes are reported again.
type nvmlWatch struct {
	ctx     context.Context
	report  func(healthwatch.Event)
	timing  watchTiming
	devices map[int]*nvmlVerdicts // by ordinal
}

// call marks the start of NVML call op about device ordinal (-1 for none),
// for the Runtime's deadline, and returns the func that marks its end.
func (w *nvmlWatch) call(ordinal int, op string) (end func()) {
	return healthwatch.TrackCall(w.ctx, ordinal, op)
}

// once registers every device in a new event set and waits on it until
// ctx ends (nil) or NVML fails (its error); waited reports that some wait
// succeeded (an event, or its timeout) before.
func (w *nvmlWatch) once(handles nvmlHandles) (waited bool, err error) {
	var set C.nvmlEventSet_t
	end := w.call(-1, "nvmlEventSetCreate")
	r := C.gpuinit_nvmlEventSetCreate(&set)
	end()
	if err := nvmlCheck("nvmlEventSetCreate", r); err != nil {
		return false, err
	}
	defer func() {
		end := w.call(-1, "nvmlEventSetFree")
		C.gpuinit_nvmlEventSetFree(set)
		end()
	}()
	byHandle := map[C.nvmlDevice_t]int{}
	var unwatched error
	for ordinal := range handles {
		err := w.register(ordinal, handles[ordinal], set)
		if err != nil {
			unwatched = err
			w.report(healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindUnwatched, At: time.Now(),
				Message: "cuda: the health of device " + fmt.Sprint(ordinal) + " is unknown: " + err.Error()})
			continue
		}
		h, _ := handles[ordinal]()
		byHandle[h] = ordinal
		w.report(healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindWatching, At: time.Now()})
	}
	if len(byHandle) == 0 {
		return false, drivercodes.Unusable("cuda", "no device could register for NVML's events", unwatched, driver.ErrNotSupported)
	}
	w.readAll(byHandle)
	lastRead := time.Now()
	for w.ctx.Err() == nil {
		// The wait blocks for up to timing.wait by design: the deadline
		// starts after it.
		end := healthwatch.TrackWait(w.ctx, -1, "nvmlEventSetWait_v2", w.timing.wait)
		e := C.gpuinit_nvmlWait(set, C.uint(w.timing.wait/time.Millisecond))
		end()
		switch e.r {
		case 0:
			if ordinal, ok := byHandle[e.device]; ok {
				w.event(ordinal, e.device, uint64(e._type), uint64(e.data))
			}
		case nvmlTimeout:
		default:
			return waited, nvmlCheck("nvmlEventSetWait_v2", e.r)
		}
		waited = true
		if time.Since(lastRead) >= w.timing.counters {
			w.readAll(byHandle)
			lastRead = time.Now()
		}
	}
	return waited, nil
}

// register looks up device ordinal's handle and registers it in set for the
// events of watchedEvents it supports.
func (w *nvmlWatch) register(ordinal int, handle func() (C.nvmlDevice_t, error), set C.nvmlEventSet_t) error {
	end := w.call(ordinal, "nvmlDeviceGetHandleByUUID")
	h, err := handle()
	end()
	if err != nil {
		return err
	}
	end = w.call(ordinal, "nvmlDeviceGetSupportedEventTypes")
	got := C.gpuinit_nvmlSupported(h)
	end()
	if err := nvmlCheck("nvmlDeviceGetSupportedEventTypes", got.r); err != nil {
		return err
	}
	types := uint64(got.types) & watchedEvents
	r := C.nvmlReturn_t(nvmlNotSupported)
	if types != 0 {
		end = w.call(ordinal, "nvmlDeviceRegisterEvents")
		r = C.gpuinit_nvmlRegister(h, C.ulonglong(types), set)
		end()
	}
	if err := nvmlCheck("nvmlDeviceRegisterEvents", r); err != nil {
		if r == nvmlNotSupported {
			err = fmt.Errorf("the device supports none of the Xid and ECC events (as on Jetson and some vGPU): %w", err)
		}
		return err
	}
	return nil
}

// readAll reads and reports each watched device's counters and verdicts.
func (w *nvmlWatch) readAll(byHandle map[C.nvmlDevice_t]int) {
	for h, ordinal := range byHandle {
		w.read(ordinal, h)
	}
}

// event reports what an NVML event means for device ordinal (handle h): an
// Xid, an ECC error, the GPU's unavailability, or a change of its recovery
// action, which it reads again (as it does after Xid 154, which announces one).
func (w *nvmlWatch) event(ordinal int, h C.nvmlDevice_t, typ, data uint64) {
	switch {
	case typ&eventRecovery != 0:
		w.readRecovery(ordinal, h)
	case typ&eventUnavailable != 0:
		w.report(healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindReset, Action: healthwatch.Lose, Name: "GPU_UNAVAILABLE",
			At: time.Now(), Message: "the GPU is unavailable (NVML's GPU-unavailable event)",
			Hint: "the driver took the GPU out of service: reset it (nvidia-smi -r) or reboot the node as its recovery action says, then restart the process"})
		w.readRecovery(ordinal, h)
	default:
		w.report(eventOf(ordinal, typ, data))
		if typ&eventXid != 0 && data == xidRecovery {
			w.readRecovery(ordinal, h)
		}
	}
}

// eventOf is what an Xid or ECC event means for device ordinal.
func eventOf(ordinal int, typ, data uint64) healthwatch.Event {
	switch {
	case typ&eventXid != 0:
		return drivercodes.XidEvent(ordinal, int(data), time.Now())
	case typ&eventDoubleBitECC != 0:
		return healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindECC, Action: healthwatch.Lose, Name: "uncorrected", At: time.Now(),
			Message: "a double-bit (uncorrectable) ECC error",
			Hint:    "the GPU's memory held an error it could not correct: reset the GPU (nvidia-smi -r), then restart the process; if it recurs, the GPU needs service"}
	}
	return healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindECC, Action: healthwatch.Count, Name: "corrected", At: time.Now(),
		Message: "a single-bit ECC error, corrected"}
}

// throttleReasons names the bits of nvmlClocksEventReasons.
func throttleReasons(bits uint64) []string {
	var names []string
	for _, r := range [...]struct {
		bit  uint64
		name string
	}{
		{0x1, "gpu-idle"}, {0x2, "applications-clocks-setting"}, {0x4, "sw-power-cap"}, {0x8, "hw-slowdown"},
		{0x10, "sync-boost"}, {0x20, "sw-thermal-slowdown"}, {0x40, "hw-thermal-slowdown"}, {0x80, "hw-power-brake-slowdown"},
		{0x100, "display-clock-setting"},
	} {
		if bits&r.bit != 0 {
			names = append(names, r.name)
		}
	}
	return names
}
