//go:build linux && cgo && !nohip

package hip

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/internal/host"
)

// WatchHealth watches each device until ctx ends, from two sources.
//
// amdgpu's RAS error counters (ras/<block>_err_count under its PCI device in
// sysfs, found by PCI bus id, under GPUINIT_SYSFS_ROOT where that is set) are
// read once at the start and then every GPUINIT_RAS_PERIOD. A rise in a
// block's uncorrectable count loses the device; a rise in its correctable
// count is counted against it. A read that fails (amdgpu refuses them while
// it recovers a GPU) is reported as a watch error and read again next
// period; it loses nothing.
//
// ROCm SMI's event notifications (librocm_smi64, loaded at the first watch;
// see rsmi_events.go for the layouts by release) come per device, matched to
// the device by PCI bus id: a VM fault or thermal throttling is counted, a
// ring hang loses the device, a GPU pre-reset loses it while the reset is in
// progress, and the post-reset event recovers it. The watch waits for them in
// steps of at most half a second, and stops them and shuts ROCm SMI down
// when ctx ends. Where ROCm SMI cannot be loaded, lacks a function, fails
// rsmi_init (as with no GPU) or cannot place a device, that device's events
// are reported unwatched, with why; the RAS watch goes on.
//
// Each source reports its own healthwatch.KindWatching or
// healthwatch.KindUnwatched for each device, the events first, then RAS,
// each Message naming its source. A device neither source can watch has its
// health unknown; where no device has either, the watch returns an error
// wrapping driver.ErrNotSupported at once. Every ROCm SMI call goes through
// healthwatch.TrackCall. Between reads and waits the watch uses no CPU.
func (b *Backend) WatchHealth(ctx context.Context, report func(healthwatch.Event)) error {
	s := state.ready.Load()
	if s == nil {
		return codeError("WatchHealth", 3)
	}
	period, err := rasPeriod()
	if err != nil {
		return err
	}
	smiWait := b.watchTiming().smiWait
	events := startSMI(ctx, s.busIDs, report)
	defer events.stop(ctx)
	sys := host.Sys()
	dirs := make([]string, len(s.busIDs))
	last := make([]*host.RASCounts, len(s.busIDs))
	watched := 0
	for ordinal, busID := range s.busIDs {
		dir, err := host.RASDir(sys, busID)
		if err != nil {
			report(healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindUnwatched, Name: "ras", At: time.Now(),
				Message: fmt.Sprintf("hip: the health of device %d is unknown: %v", ordinal, err)})
			continue
		}
		dirs[ordinal] = dir
		watched++
		report(healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindWatching, Name: "ras", At: time.Now(), Message: "amdgpu RAS counters"})
	}
	if watched == 0 && events == nil {
		return fmt.Errorf("hip: no device has amdgpu RAS counters under %s, nor ROCm SMI events: %w", sys, driver.ErrNotSupported)
	}
	next := time.Now()
	for ctx.Err() == nil {
		if watched > 0 && !time.Now().Before(next) {
			for ordinal, dir := range dirs {
				if dir != "" {
					last[ordinal] = readRAS(ordinal, dir, last[ordinal], report)
				}
			}
			next = time.Now().Add(period)
		}
		until := time.Until(next)
		if watched == 0 {
			until = time.Hour // events alone: the wait below is all there is
		}
		if events != nil {
			events.wait(ctx, int(min(until, smiWait)/time.Millisecond), report)
			continue
		}
		t := time.NewTimer(until)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	return nil
}

// readRAS reads one device's counters, reports what rose since before (nil
// at the first read), and returns the counts to compare the next read with.
func readRAS(ordinal int, dir string, before *host.RASCounts, report func(healthwatch.Event)) *host.RASCounts {
	now, err := host.ReadRAS(dir)
	if err != nil {
		report(healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindWatchError, At: time.Now(),
			Message: fmt.Sprintf("hip: device %d: %v; reading again next period", ordinal, err)})
		return before
	}
	if before != nil {
		if blocks, by := host.RASRise(*before, now, false); by > 0 {
			report(healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindRAS, Action: healthwatch.Lose, Code: int(by), Name: "uncorrectable",
				Message: fmt.Sprintf("amdgpu RAS: %d uncorrectable error(s) in %s (%d in all since boot)", by, strings.Join(blocks, ", "), now.Uncorrectable),
				Hint:    "the GPU's hardware took an error it could not correct: reset the GPU (amd-smi reset --gpureset, or reboot), then restart the process; if it recurs, the GPU needs service",
				At:      time.Now()})
		}
		if blocks, by := host.RASRise(*before, now, true); by > 0 {
			report(healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindRAS, Action: healthwatch.Count, Code: int(by), Name: "correctable",
				Message: fmt.Sprintf("amdgpu RAS: %d correctable error(s) in %s", by, strings.Join(blocks, ", ")), At: time.Now()})
		}
	}
	ue, ce := now.Uncorrectable, now.Correctable
	report(healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindCounters, At: time.Now(),
		Counters: &healthwatch.Counters{ECCUncorrected: &ue, ECCCorrected: &ce}})
	return &now
}
