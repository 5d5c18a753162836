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
	"github.com/gpuinit/gpuinit/device/internal/xid"
)

// The NVML event types the watch registers for.
const (
	eventSingleBitECC = 0x1
	eventDoubleBitECC = 0x2
	eventXid          = 0x8
	watchedEvents     = eventSingleBitECC | eventDoubleBitECC | eventXid
)

const (
	nvmlNotSupported = 3
	nvmlTimeout      = 10
	// waitMillis bounds one nvmlEventSetWait_v2: the watch blocks in it,
	// using no CPU, and looks at its context between two (so a Runtime's
	// Close waits for it no longer than this, unless NVML hangs, when Close
	// abandons it when its ctx ends).
	waitMillis = 1000
	// countersEvery is how often the counters are read again.
	countersEvery = 30 * time.Second
)

// WatchHealth watches the devices' NVML events (Xid critical errors, single-
// and double-bit ECC) until ctx ends: an Xid is classified by NVIDIA's Xid
// catalog (device/internal/xid: one that needs a reset, a reboot or service
// loses the device, an application's error is counted); a double-bit ECC
// error loses the device and a single-bit one is counted. Each device's
// counters (ECC mode and counts, row remapping, retired pages and whether a
// retirement is pending, persistence mode, clock throttle reasons) are read
// at the start and every 30 s. Devices are matched
// to events by their NVML handle, looked up by UUID, never by index. A device
// that cannot register for events (Jetson, some vGPU) is reported unwatched:
// its health is unknown. Where NVML cannot be loaded or has no event API the
// watch returns an error wrapping driver.ErrNotSupported at once. An NVML
// error while waiting is reported and the watch starts again after a backoff
// of 1 s, doubling to 30 s while it fails again before a wait succeeds, and
// back to 1 s once one has; it loses no device. Each NVML call is made on
// the calling goroutine and may block in the driver: a wait returns within a
// second, but on a dead GPU any call may never return, and then neither does
// WatchHealth (the Runtime's Close abandons it when its ctx ends).
func (*Backend) WatchHealth(ctx context.Context, report func(driver.HealthEvent)) error {
	handles, err := loadNVML()
	if err != nil {
		return fmt.Errorf("%w: cuda: NVML (libnvidia-ml.so.1) cannot be used, so the devices' health is not watched: %w", driver.ErrNotSupported, err)
	}
	if C.gpuinit_nvmlHasEvents() == 0 {
		return fmt.Errorf("%w: cuda: this NVML has no event API, so the devices' health is not watched", driver.ErrNotSupported)
	}
	backoff := time.Second
	for {
		waited, err := watchOnce(ctx, handles, report)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, driver.ErrNotSupported) {
			return err
		}
		if waited { // it watched again: this failure is a new one
			backoff = time.Second
		}
		report(driver.HealthEvent{Ordinal: -1, Kind: driver.HealthWatchError, At: time.Now(),
			Message: fmt.Sprintf("%v; watching again in %s", err, backoff)})
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// watchOnce registers every device in a new event set and waits on it until
// ctx ends (nil) or NVML fails (its error); waited reports that some wait
// succeeded (an event, or its timeout) before.
func watchOnce(ctx context.Context, handles nvmlHandles, report func(driver.HealthEvent)) (waited bool, err error) {
	var set C.nvmlEventSet_t
	if err := nvmlCheck("nvmlEventSetCreate", C.gpuinit_nvmlEventSetCreate(&set)); err != nil {
		return false, err
	}
	defer C.gpuinit_nvmlEventSetFree(set)
	byHandle := map[C.nvmlDevice_t]int{}
	var unwatched error
	for ordinal := range handles {
		h, err := handles[ordinal]()
		if err == nil {
			var got C.ulonglong
			if r := C.gpuinit_nvmlRegister(h, watchedEvents, set, &got); r != 0 {
				err = nvmlCheck("nvmlDeviceRegisterEvents", r)
				if r == nvmlNotSupported {
					err = fmt.Errorf("the device supports none of the Xid and ECC events (as on Jetson and some vGPU): %w", err)
				}
			}
		}
		if err != nil {
			unwatched = err
			report(driver.HealthEvent{Ordinal: ordinal, Kind: driver.HealthUnwatched, At: time.Now(),
				Message: "cuda: the health of device " + fmt.Sprint(ordinal) + " is unknown: " + err.Error()})
			continue
		}
		byHandle[h] = ordinal
		report(driver.HealthEvent{Ordinal: ordinal, Kind: driver.HealthWatching, At: time.Now()})
	}
	if len(byHandle) == 0 {
		return false, fmt.Errorf("%w: cuda: no device could register for NVML's events: %w", driver.ErrNotSupported, unwatched)
	}
	readCounters(byHandle, report)
	lastRead := time.Now()
	for ctx.Err() == nil {
		e := C.gpuinit_nvmlWait(set, waitMillis)
		switch e.r {
		case 0:
			if ordinal, ok := byHandle[e.device]; ok {
				report(eventOf(ordinal, uint64(e._type), uint64(e.data)))
			}
		case nvmlTimeout:
		default:
			return waited, nvmlCheck("nvmlEventSetWait_v2", e.r)
		}
		waited = true
		if time.Since(lastRead) >= countersEvery {
			readCounters(byHandle, report)
			lastRead = time.Now()
		}
	}
	return waited, nil
}

// eventOf is what an NVML event means for device ordinal.
func eventOf(ordinal int, typ, data uint64) driver.HealthEvent {
	switch {
	case typ&eventXid != 0:
		return xid.Event(ordinal, int(data), time.Now())
	case typ&eventDoubleBitECC != 0:
		return driver.HealthEvent{Ordinal: ordinal, Kind: driver.HealthECC, Action: driver.HealthLose, Name: "uncorrected", At: time.Now(),
			Message: "a double-bit (uncorrectable) ECC error",
			Hint:    "the GPU's memory held an error it could not correct: reset the GPU (nvidia-smi -r), then restart the process; if it recurs, the GPU needs service"}
	}
	return driver.HealthEvent{Ordinal: ordinal, Kind: driver.HealthECC, Action: driver.HealthCount, Name: "corrected", At: time.Now(),
		Message: "a single-bit ECC error, corrected"}
}

// readCounters reads and reports each watched device's counters.
func readCounters(byHandle map[C.nvmlDevice_t]int, report func(driver.HealthEvent)) {
	for h, ordinal := range byHandle {
		c := C.gpuinit_nvmlCounters(h)
		hc := &driver.HealthCounters{}
		if c.persistence_r == 0 {
			on := c.persistence == 1
			hc.Persistence = &on
		}
		if c.ecc_r == 0 {
			on := c.ecc == 1
			hc.ECCEnabled = &on
		}
		if c.corrected_r == 0 {
			n := uint64(c.corrected)
			hc.ECCCorrected = &n
		}
		if c.uncorrected_r == 0 {
			n := uint64(c.uncorrected)
			hc.ECCUncorrected = &n
		}
		if c.remap_r == 0 {
			pending, failed := c.remap_pending != 0, c.remap_failed != 0
			hc.RowRemapsPending, hc.RowRemapFailed = &pending, &failed
		}
		if c.throttle_r == 0 {
			hc.ThrottleReasons = throttleReasons(uint64(c.throttle))
		}
		if c.retired_r == 0 {
			n := uint64(c.retired)
			hc.RetiredPages = &n
		}
		if c.retired_pending_r == 0 {
			pending := c.retired_pending == 1
			hc.RetiredPagesPending = &pending
		}
		report(driver.HealthEvent{Ordinal: ordinal, Kind: driver.HealthRead, Counters: hc, At: time.Now()})
	}
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
