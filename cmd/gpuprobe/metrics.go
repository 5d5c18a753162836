package main

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpuinit/gpuinit/device"
)

// metrics writes Prometheus' text exposition format (version 0.0.4) as
// Prometheus' own Go client writes it: each family's HELP and TYPE, then
// its samples; label values escaped as the format says (\\, \" and \n,
// nothing else), and made valid UTF-8; values as the client formats them.
// A series written twice is written once: the first sample stands, since a
// textfile with a duplicate is dropped whole by node_exporter. Two values
// that differ only in bytes that are not UTF-8 (a driver's C string) become
// one.
type metrics struct {
	b    bytes.Buffer
	seen map[string]bool // the series written: name and label pairs, escaped
}

// gauge starts the gauge family name.
func (m *metrics) gauge(name, help string) {
	help = strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(strings.ToValidUTF8(help, "\uFFFD"))
	fmt.Fprintf(&m.b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
}

// sample writes one sample of name: labels are name, value pairs.
func (m *metrics) sample(name string, value float64, labels ...string) {
	var series strings.Builder
	series.WriteString(name)
	for i := 0; i+1 < len(labels); i += 2 {
		sep := ","
		if i == 0 {
			sep = "{"
		}
		fmt.Fprintf(&series, "%s%s=\"%s\"", sep, labels[i], escapeLabel(labels[i+1]))
	}
	if len(labels) > 1 {
		series.WriteByte('}')
	}
	if m.seen[series.String()] {
		return
	}
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	m.seen[series.String()] = true
	m.b.WriteString(series.String())
	m.b.WriteByte(' ')
	m.b.WriteString(formatFloat(value))
	m.b.WriteByte('\n')
}

// labelEscaper escapes a label value as the text format does.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// escapeLabel is v as a quoted label value's contents: valid UTF-8 (the
// format's), with the three escapes the format has. Go's %q is not that: it
// writes \t, \x00 and \u00e9, which the format's parsers reject.
func escapeLabel(v string) string { return labelEscaper.Replace(strings.ToValidUTF8(v, "\uFFFD")) }

// formatFloat formats f as Prometheus' Go client does (expfmt's
// writeFloat): NaN, +Inf and -Inf by those names, 0 for both zeros, else
// the shortest decimal that parses back to f.
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, +1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case f == 0:
		return "0"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// seconds is a duration the report holds in milliseconds, with its
// microseconds, in seconds: 33.127 ms is 0.033127, not 33.127/1000, which
// is 0.033127000000000004 (33.127 has no exact float; 33127 does).
func seconds(ms float64) float64 {
	if math.IsNaN(ms) || math.IsInf(ms, 0) || math.Abs(ms) > 1e12 {
		return ms / 1000
	}
	return math.Round(ms*1000) / 1e6
}

// initFacts is what the GPU metrics say of one backend: its failure's
// class ("" where it did not fail), its devices and its driver's version.
type initFacts struct {
	backend, class         string
	devices, driverVersion int
}

// gpuFacts are the backends the GPU metrics are about. After a fallback to
// sim, they are the GPU backends that failed, each with its own class and
// driver version: sim's devices and driver are none of this node's. After
// -require-gpu found none, they are the backends auto passed over. Else it
// is the backend probed, failed or not.
func (r report) gpuFacts() []initFacts {
	var failed []backendFailure
	switch {
	case r.Fallback != nil:
		failed = r.Fallback.Backends
	case r.Class != "" && r.ExitCode != exitOK:
		failed = r.PassedOver
	}
	if len(failed) == 0 {
		devices := len(r.Devices)
		if r.noGPU() {
			devices = 0
		}
		return []initFacts{{backend: r.Backend, class: r.Class, devices: devices, driverVersion: r.DriverVersion}}
	}
	out := make([]initFacts, 0, len(failed))
	for _, f := range failed {
		class := ""
		if f.Error != nil {
			class = f.Error.Class
		}
		out = append(out, initFacts{backend: f.Backend, class: class, driverVersion: f.DriverVersion})
	}
	return out
}

// promMetrics renders the node_exporter textfile metrics.
func promMetrics(r report, now time.Time) []byte {
	var m metrics
	success := 0.0
	if r.verdict() == "ok" {
		success = 1
	}
	m.gauge("gpuinit_probe_success", "Whether GPU bring-up and every re-entrant scenario worked on this node (1) or not (0).")
	m.sample("gpuinit_probe_success", success, "backend", r.Backend, "verdict", r.verdict())
	m.gauge("gpuinit_scenario_duration_seconds", "How long each re-entrant scenario's child process took, by verdict.")
	for _, s := range r.Scenarios {
		m.sample("gpuinit_scenario_duration_seconds", seconds(s.DurationMillis), "scenario", s.Name, "verdict", s.Verdict)
	}
	m.gauge("gpuinit_init_duration_seconds", "How long the probed backend's initialization took.")
	m.sample("gpuinit_init_duration_seconds", seconds(r.InitMillis), "backend", r.Backend)
	facts := r.gpuFacts()
	m.gauge("gpuinit_devices", "How many GPUs the driver reported; 0 where the node has none to probe (after a fallback to sim, by GPU backend).")
	for _, f := range facts {
		m.sample("gpuinit_devices", float64(f.devices), "backend", f.backend)
	}
	m.gauge("gpuinit_driver_version", "The driver's version (CUDA: 12040 for 12.4); 0 where unknown.")
	for _, f := range facts {
		m.sample("gpuinit_driver_version", float64(f.driverVersion), "backend", f.backend)
	}
	m.gauge("gpuinit_init_failure", "The GPU backend's initialization failed, by class (no-gpu, not-yet, needs-operator): 1 for the class it failed with.")
	for _, f := range facts {
		for _, c := range []device.Class{device.ClassNoGPUHere, device.ClassNotYet, device.ClassNeedsOperator} {
			m.sample("gpuinit_init_failure", float64(boolMetric(f.class == c.String())), "backend", f.backend, "class", c.String())
		}
	}
	if r.BringUp != nil {
		// The bring-up's preflights were the GPU runtime's: auto's, where
		// it fell back.
		backend := r.Backend
		if r.Fallback != nil {
			backend = "auto"
		}
		m.gauge("gpuinit_preflight_attempts", "How many preflight children the bring-up ran.")
		m.sample("gpuinit_preflight_attempts", float64(r.BringUp.Attempts), "backend", backend)
	}
	if !r.noGPU() {
		deviceMetrics(&m, r)
	}
	m.gauge("gpuinit_probe_timestamp_seconds", "When the probe ran, in seconds since the epoch.")
	m.sample("gpuinit_probe_timestamp_seconds", float64(now.Unix()))
	return m.b.Bytes()
}
