package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/health"
)

// healthSettle bounds how long the probe waits for the driver's health watch
// to report each device (watched or not, and its counters).
const healthSettle = 3 * time.Second

// checkHealth runs one readiness canary on each device, waits for the health
// watch to have reported every device, and then for watch more (or until
// ctx ends), and records both, and any device lost, in rep; then it stops
// the Runtime's watches.
func checkHealth(ctx context.Context, rt *device.Runtime, watch time.Duration, rep *report) {
	defer rt.Shutdown(context.Background())
	for i := range rep.Devices {
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, healthSettle)
		err := rt.Canary(cctx, rep.Devices[i].Ordinal)
		cancel()
		c := &health.Canary{At: start, TookMillis: float64(time.Since(start).Microseconds()) / 1000, OK: err == nil}
		if err != nil {
			c.Error = health.ErrorOf(err)
		}
		if !errors.Is(err, device.ErrNotSupported) {
			rep.Devices[i].Canary = c
		}
	}
	deadline := time.NewTimer(healthSettle)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !rt.Stats().HealthSettled() {
		select {
		case <-ctx.Done():
		case <-deadline.C:
		case <-tick.C:
			continue
		}
		break
	}
	if watch > 0 {
		t := time.NewTimer(watch)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	hs := rt.Stats().Health
	for i := range rep.Devices {
		if o := rep.Devices[i].Ordinal; o >= 0 && o < len(hs) {
			rep.Devices[i].Health = health.DeviceHealthOf(hs[o])
		}
	}
	for _, l := range rt.Stats().Lost {
		rep.Lost = append(rep.Lost, health.Lost{Ordinal: l.Ordinal, Source: string(l.Source), Error: health.ErrorOf(l), At: l.At})
	}
}

// deviceMetrics renders each device's health, canary and losses as metrics.
func deviceMetrics(b *bytes.Buffer, r report, gauge func(name, help string)) {
	if len(r.Devices) == 0 {
		return
	}
	labels := func(d deviceInfo) string {
		return fmt.Sprintf("backend=%q,ordinal=\"%d\",uuid=%q", r.Backend, d.Ordinal, d.UUID)
	}
	gauge("gpuinit_device_health_watched", "Whether the driver's health events are watched on the device (1), or its health is unknown (0).")
	for _, d := range r.Devices {
		fmt.Fprintf(b, "gpuinit_device_health_watched{%s} %d\n", labels(d), boolMetric(d.Health != nil && d.Health.Watched))
	}
	gauge("gpuinit_device_health_events", "Health events counted against the device (Xids that leave it in service, corrected ECC errors, RAS counts), by event.")
	for _, d := range r.Devices {
		if d.Health == nil {
			continue
		}
		for _, ev := range slices.Sorted(maps.Keys(d.Health.Counted)) {
			fmt.Fprintf(b, "gpuinit_device_health_events{%s,event=%q} %d\n", labels(d), ev, d.Health.Counted[ev])
		}
	}
	gauge("gpuinit_device_ecc_errors", "The driver's ECC error counts for the device, by type; absent where it cannot read them.")
	for _, d := range r.Devices {
		if d.Health == nil || d.Health.Counters == nil {
			continue
		}
		if c := d.Health.Counters.ECCCorrected; c != nil {
			fmt.Fprintf(b, "gpuinit_device_ecc_errors{%s,type=\"corrected\"} %d\n", labels(d), *c)
		}
		if c := d.Health.Counters.ECCUncorrected; c != nil {
			fmt.Fprintf(b, "gpuinit_device_ecc_errors{%s,type=\"uncorrected\"} %d\n", labels(d), *c)
		}
	}
	gauge("gpuinit_device_row_remap_pending", "Whether the device has row remappings pending a reset (1); absent where unknown.")
	for _, d := range r.Devices {
		if d.Health != nil && d.Health.Counters != nil && d.Health.Counters.RowRemapsPending != nil {
			fmt.Fprintf(b, "gpuinit_device_row_remap_pending{%s} %d\n", labels(d), boolMetric(*d.Health.Counters.RowRemapsPending))
		}
	}
	gauge("gpuinit_device_row_remap_failed", "Whether a row remapping failed on the device (1: service it), as DCGM's DCGM_FI_DEV_ROW_REMAP_FAILURE; absent where unknown.")
	for _, d := range r.Devices {
		if d.Health != nil && d.Health.Counters != nil && d.Health.Counters.RowRemapFailed != nil {
			fmt.Fprintf(b, "gpuinit_device_row_remap_failed{%s} %d\n", labels(d), boolMetric(*d.Health.Counters.RowRemapFailed))
		}
	}
	gauge("gpuinit_device_pcie_replays", "The device's PCIe replay counter since the driver loaded, as DCGM's DCGM_FI_DEV_PCIE_REPLAY_COUNTER; absent where unknown.")
	for _, d := range r.Devices {
		if d.Health != nil && d.Health.Counters != nil && d.Health.Counters.PCIeReplays != nil {
			fmt.Fprintf(b, "gpuinit_device_pcie_replays{%s} %d\n", labels(d), *d.Health.Counters.PCIeReplays)
		}
	}
	verdictMetrics(b, r, labels, gauge)
	gauge("gpuinit_device_canary_ok", "Whether the device's 4-byte round trip worked (1) or not (0); absent where the backend has no canary.")
	for _, d := range r.Devices {
		if d.Canary != nil {
			fmt.Fprintf(b, "gpuinit_device_canary_ok{%s} %d\n", labels(d), boolMetric(d.Canary.OK))
		}
	}
	gauge("gpuinit_device_lost", "Devices lost while probed, by who saw it: 1 per lost device.")
	for _, l := range r.Lost {
		fmt.Fprintf(b, "gpuinit_device_lost{backend=%q,ordinal=\"%d\",source=%q} 1\n", r.Backend, l.Ordinal, l.Source)
	}
}

func boolMetric(v bool) int {
	if v {
		return 1
	}
	return 0
}

// verdicts are the device verdicts' names, in the order metrics list them.
var verdicts = []driver.Verdict{driver.VerdictHealthy, driver.VerdictDegraded, driver.VerdictUnhealthy, driver.VerdictUnknown}

// verdictMetrics renders each device's verdict as a state set (1 for its
// verdict, 0 for the others), and the driver's recovery action where it
// says one.
func verdictMetrics(b *bytes.Buffer, r report, labels func(deviceInfo) string, gauge func(name, help string)) {
	gauge("gpuinit_device_verdict", "The device's health in one word, one series a verdict: 1 for the device's (healthy, degraded, unhealthy, unknown), 0 for the others.")
	for _, d := range r.Devices {
		v := driver.VerdictUnknown
		if d.Health != nil {
			v = d.Health.Verdict
		}
		for _, w := range verdicts {
			fmt.Fprintf(b, "gpuinit_device_verdict{%s,verdict=%q} %d\n", labels(d), w, boolMetric(v == w))
		}
	}
	gauge("gpuinit_device_recovery_action", "What the driver says the GPU needs (NVML's GPU recovery action: none, reset-gpu, reboot-node, drain, service): 1 for the action; absent where the driver cannot say.")
	for _, d := range r.Devices {
		if d.Health != nil && d.Health.Recovery != "" {
			fmt.Fprintf(b, "gpuinit_device_recovery_action{%s,action=%q} 1\n", labels(d), d.Health.Recovery)
		}
	}
}

// worstVerdict is the node's health in one word: its worst device's verdict
// (unhealthy, then degraded, then unknown), healthy when every device is,
// and "" without devices.
func worstVerdict(devices []deviceInfo) string {
	if len(devices) == 0 {
		return ""
	}
	rank := map[driver.Verdict]int{driver.VerdictHealthy: 0, driver.VerdictUnknown: 1, driver.VerdictDegraded: 2, driver.VerdictUnhealthy: 3}
	worst := driver.VerdictHealthy
	for _, d := range devices {
		v := driver.VerdictUnknown
		if d.Health != nil {
			v = d.Health.Verdict
		}
		if rank[v] > rank[worst] {
			worst = v
		}
	}
	return worst.String()
}
