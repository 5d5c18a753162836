package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
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
func deviceMetrics(m *metrics, r report) {
	if len(r.Devices) == 0 {
		return
	}
	labels := func(d deviceInfo, more ...string) []string {
		return append([]string{"backend", r.Backend, "ordinal", fmt.Sprint(d.Ordinal), "uuid", d.UUID}, more...)
	}
	m.gauge("gpuinit_device_health_watched", "Whether the driver's health events are watched on the device (1), or its health is unknown (0).")
	for _, d := range r.Devices {
		m.sample("gpuinit_device_health_watched", float64(boolMetric(d.Health != nil && d.Health.Watched)), labels(d)...)
	}
	m.gauge("gpuinit_device_health_events", "Health events counted against the device (Xids that leave it in service, corrected ECC errors, RAS counts), by event.")
	for _, d := range r.Devices {
		if d.Health == nil {
			continue
		}
		for _, ev := range slices.Sorted(maps.Keys(d.Health.Counted)) {
			m.sample("gpuinit_device_health_events", float64(d.Health.Counted[ev]), labels(d, "event", ev)...)
		}
	}
	counters := func(d deviceInfo) *healthwatch.Counters {
		if d.Health == nil {
			return nil
		}
		return d.Health.Counters
	}
	m.gauge("gpuinit_device_ecc_errors", "The driver's ECC error counts for the device, by type; absent where it cannot read them.")
	for _, d := range r.Devices {
		if c := counters(d); c != nil && c.ECCCorrected != nil {
			m.sample("gpuinit_device_ecc_errors", float64(*c.ECCCorrected), labels(d, "type", "corrected")...)
		}
		if c := counters(d); c != nil && c.ECCUncorrected != nil {
			m.sample("gpuinit_device_ecc_errors", float64(*c.ECCUncorrected), labels(d, "type", "uncorrected")...)
		}
	}
	m.gauge("gpuinit_device_row_remap_pending", "Whether the device has row remappings pending a reset (1); absent where unknown.")
	for _, d := range r.Devices {
		if c := counters(d); c != nil && c.RowRemapsPending != nil {
			m.sample("gpuinit_device_row_remap_pending", float64(boolMetric(*c.RowRemapsPending)), labels(d)...)
		}
	}
	m.gauge("gpuinit_device_row_remap_failed", "Whether a row remapping failed on the device (1: service it), as DCGM's DCGM_FI_DEV_ROW_REMAP_FAILURE; absent where unknown.")
	for _, d := range r.Devices {
		if c := counters(d); c != nil && c.RowRemapFailed != nil {
			m.sample("gpuinit_device_row_remap_failed", float64(boolMetric(*c.RowRemapFailed)), labels(d)...)
		}
	}
	m.gauge("gpuinit_device_pcie_replays", "The device's PCIe replay counter since the driver loaded, as DCGM's DCGM_FI_DEV_PCIE_REPLAY_COUNTER; absent where unknown.")
	for _, d := range r.Devices {
		if c := counters(d); c != nil && c.PCIeReplays != nil {
			m.sample("gpuinit_device_pcie_replays", float64(*c.PCIeReplays), labels(d)...)
		}
	}
	verdictMetrics(m, r, labels)
	m.gauge("gpuinit_device_canary_ok", "Whether the device's 4-byte round trip worked (1) or not (0); absent where the backend has no canary.")
	for _, d := range r.Devices {
		if d.Canary != nil {
			m.sample("gpuinit_device_canary_ok", float64(boolMetric(d.Canary.OK)), labels(d)...)
		}
	}
	m.gauge("gpuinit_device_lost", "Devices lost while probed, by who saw it: 1 per lost device.")
	for _, l := range r.Lost {
		m.sample("gpuinit_device_lost", 1, "backend", r.Backend, "ordinal", fmt.Sprint(l.Ordinal), "source", l.Source)
	}
}

func boolMetric(v bool) int {
	if v {
		return 1
	}
	return 0
}

// verdicts are the device verdicts' names, in the order metrics list them.
var verdicts = []healthwatch.Verdict{healthwatch.VerdictHealthy, healthwatch.VerdictDegraded, healthwatch.VerdictUnhealthy, healthwatch.VerdictUnknown}

// verdictMetrics renders each device's verdict as a state set (1 for its
// verdict, 0 for the others), and the driver's recovery action where it
// says one.
func verdictMetrics(m *metrics, r report, labels func(d deviceInfo, more ...string) []string) {
	m.gauge("gpuinit_device_verdict", "The device's health in one word, one series a verdict: 1 for the device's (healthy, degraded, unhealthy, unknown), 0 for the others.")
	for _, d := range r.Devices {
		v := healthwatch.VerdictUnknown
		if d.Health != nil {
			v = d.Health.Verdict
		}
		for _, w := range verdicts {
			m.sample("gpuinit_device_verdict", float64(boolMetric(v == w)), labels(d, "verdict", w.String())...)
		}
	}
	m.gauge("gpuinit_device_recovery_action", "What the driver says the GPU needs (NVML's GPU recovery action: none, reset-gpu, reboot-node, drain, service): 1 for the action; absent where the driver cannot say.")
	for _, d := range r.Devices {
		if d.Health != nil && d.Health.Recovery != "" {
			m.sample("gpuinit_device_recovery_action", 1, labels(d, "action", d.Health.Recovery)...)
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
	rank := map[healthwatch.Verdict]int{healthwatch.VerdictHealthy: 0, healthwatch.VerdictUnknown: 1, healthwatch.VerdictDegraded: 2, healthwatch.VerdictUnhealthy: 3}
	worst := healthwatch.VerdictHealthy
	for _, d := range devices {
		v := healthwatch.VerdictUnknown
		if d.Health != nil {
			v = d.Health.Verdict
		}
		if rank[v] > rank[worst] {
			worst = v
		}
	}
	return worst.String()
}
