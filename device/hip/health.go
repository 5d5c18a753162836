//go:build linux && cgo && !nohip

package hip

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/hostfs"
	"github.com/gpuinit/gpuinit/device/internal/ras"
)

// WatchHealth watches each device's amdgpu RAS error counters
// (ras/<block>_err_count under its PCI device in sysfs, found by PCI bus id,
// under GPUINIT_SYSFS_ROOT where that is set) until ctx ends: read once at
// the start and then every GPUINIT_RAS_PERIOD. A rise in a block's
// uncorrectable count loses the device; a rise in its correctable count is
// counted against it. A device whose board has no RAS counters is reported
// unwatched, its health unknown; where no device has them, the watch
// returns an error wrapping driver.ErrNotSupported at once. A read that
// fails (amdgpu refuses them while it recovers a GPU) is reported as a
// watch error and read again next period; it loses nothing. Between reads
// the watch sleeps.
func (*Backend) WatchHealth(ctx context.Context, report func(driver.HealthEvent)) error {
	s := state.ready.Load()
	if s == nil {
		return codeError("WatchHealth", 3)
	}
	period, err := rasPeriod()
	if err != nil {
		return err
	}
	sys := hostfs.Sys()
	dirs := make([]string, len(s.busIDs))
	last := make([]*ras.Counts, len(s.busIDs))
	watched := 0
	for ordinal, busID := range s.busIDs {
		dir, err := ras.Dir(sys, busID)
		if err != nil {
			report(driver.HealthEvent{Ordinal: ordinal, Kind: driver.HealthUnwatched, At: time.Now(),
				Message: fmt.Sprintf("hip: the health of device %d is unknown: %v", ordinal, err)})
			continue
		}
		dirs[ordinal] = dir
		watched++
		report(driver.HealthEvent{Ordinal: ordinal, Kind: driver.HealthWatching, At: time.Now()})
	}
	if watched == 0 {
		return fmt.Errorf("%w: hip: no device has amdgpu RAS counters under %s", driver.ErrNotSupported, sys)
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		for ordinal, dir := range dirs {
			if dir != "" {
				last[ordinal] = readRAS(ordinal, dir, last[ordinal], report)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// readRAS reads one device's counters, reports what rose since before (nil
// at the first read), and returns the counts to compare the next read with.
func readRAS(ordinal int, dir string, before *ras.Counts, report func(driver.HealthEvent)) *ras.Counts {
	now, err := ras.Read(dir)
	if err != nil {
		report(driver.HealthEvent{Ordinal: ordinal, Kind: driver.HealthWatchError, At: time.Now(),
			Message: fmt.Sprintf("hip: device %d: %v; reading again next period", ordinal, err)})
		return before
	}
	if before != nil {
		if blocks, by := ras.Rise(*before, now, false); by > 0 {
			report(driver.HealthEvent{Ordinal: ordinal, Kind: driver.HealthRAS, Action: driver.HealthLose, Code: int(by), Name: "uncorrectable",
				Message: fmt.Sprintf("amdgpu RAS: %d uncorrectable error(s) in %s (%d in all since boot)", by, strings.Join(blocks, ", "), now.Uncorrectable),
				Hint:    "the GPU's hardware took an error it could not correct: reset the GPU (amd-smi reset --gpureset, or reboot), then restart the process; if it recurs, the GPU needs service",
				At:      time.Now()})
		}
		if blocks, by := ras.Rise(*before, now, true); by > 0 {
			report(driver.HealthEvent{Ordinal: ordinal, Kind: driver.HealthRAS, Action: driver.HealthCount, Code: int(by), Name: "correctable",
				Message: fmt.Sprintf("amdgpu RAS: %d correctable error(s) in %s", by, strings.Join(blocks, ", ")), At: time.Now()})
		}
	}
	ue, ce := now.Uncorrectable, now.Correctable
	report(driver.HealthEvent{Ordinal: ordinal, Kind: driver.HealthRead, At: time.Now(),
		Counters: &driver.HealthCounters{ECCUncorrected: &ue, ECCCorrected: &ce}})
	return &now
}
