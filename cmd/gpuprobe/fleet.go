package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/internal/hangcheck"
)

// The fleet outputs: a Node Feature Discovery local-source feature file, whose
// lines NFD turns into node labels, and a node_exporter textfile-collector
// file of Prometheus metrics. Both say the same as the JSON report of the same
// run, and both are written atomically.

// labelPrefix is the prefix of every node label gpuprobe publishes.
const labelPrefix = "gpuinit.io/"

// verdict is the probe's one-word result for labels and metrics: ok; hang
// (initialization or a scenario hung); the GPU runtime's failure class
// (no-gpu, not-yet, needs-operator), whether or not sim was probed instead;
// or failed (a scenario or the RNG check failed). A run that fell back to sim
// says its class: sim says nothing about this node's GPUs.
func (r report) verdict() string {
	switch {
	case r.Error != nil && r.Error.Kind == string(hangcheck.Hang):
		return string(hangcheck.Hang)
	case r.Class != "" && (r.Fallback != nil || r.ExitCode != exitOK):
		return r.Class
	case r.Fallback != nil, r.ExitCode == exitUnavailable:
		return device.NoGPUHere.String()
	case r.ExitCode == exitOK:
		return "ok"
	case len(r.Lost) > 0:
		return "device-lost"
	}
	for _, s := range r.Scenarios {
		if s.Verdict == string(hangcheck.Hang) {
			return string(hangcheck.Hang)
		}
	}
	return "failed"
}

// noGPU reports a run that found no GPU to probe: it fell back to sim, or
// the GPU runtime failed. Its devices, if any, are sim's.
func (r report) noGPU() bool {
	return r.Fallback != nil || (r.Class != "" && r.ExitCode != exitOK)
}

// noGPUReason is the kind of failure that left the node without a GPU
// (no-driver, no-device, driver-mismatch…): the lead backend's, "" where
// none is known.
func (r report) noGPUReason() string {
	if r.Fallback != nil {
		for _, f := range r.Fallback.Backends {
			if f.Error != nil && f.Error.Kind != "" && (r.Class == "" || f.Error.Class == r.Class) {
				return f.Error.Kind
			}
		}
	}
	if r.Error != nil {
		return r.Error.Kind
	}
	return ""
}

// notInLabels matches what a Kubernetes label value may not hold.
var notInLabels = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// labelValue makes s a valid Kubernetes label value: at most 63 characters of
// [A-Za-z0-9_.-], starting and ending with an alphanumeric.
func labelValue(s string) string {
	s = notInLabels.ReplaceAllString(s, "_")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "_.-")
}

// nfdFeatures renders the NFD feature file: an expiry directive, so that a
// node whose probe stopped running loses its labels, then one name=value line
// per label.
func nfdFeatures(r report, now time.Time, ttl time.Duration) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# gpuinit's gpuprobe, %s; labels expire unless it runs again\n", now.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "# +expiry-time=%s\n", now.Add(ttl).UTC().Format(time.RFC3339))
	label := func(name, value string) { fmt.Fprintf(&b, "%s%s=%s\n", labelPrefix, name, labelValue(value)) }
	label("probe", r.verdict())
	if r.noGPU() {
		// What sim found says nothing of this node: a device or arch label
		// would put GPU pods on it. The verdict and its reason only.
		if reason := r.noGPUReason(); reason != "" {
			label("reason", reason)
		}
		return b.Bytes()
	}
	label("backend", r.Backend)
	if r.DriverVersion != 0 {
		label("driver-version", fmt.Sprint(r.DriverVersion))
	}
	label("devices", fmt.Sprint(len(r.Devices)))
	if h := worstVerdict(r.Devices); h != "" {
		label("health", h)
	}
	var archs []string
	for _, d := range r.Devices {
		if d.Arch != "" && !slices.Contains(archs, d.Arch) {
			archs = append(archs, d.Arch)
		}
	}
	slices.Sort(archs)
	for _, a := range archs {
		label("arch."+labelValue(a), "true")
	}
	if r.RNG != nil {
		label("rng", r.RNG.Verdict)
	}
	migLabels(label, r.Devices)
	return b.Bytes()
}

// migLabels labels each MIG profile among the devices with its instances'
// count, memory (MiB) and multiprocessors, under the suffixes NVIDIA's GPU
// Feature Discovery uses (nvidia.com/mig-1g.10gb.count becomes
// gpuinit.io/mig-1g.10gb.count), so that a rule written for one reads the
// other. An instance whose profile NVML does not say is left out.
func migLabels(label func(name, value string), devices []deviceInfo) {
	type profile struct {
		count           int
		memory          uint64 // MiB
		multiprocessors int
	}
	profiles := map[string]*profile{}
	for _, d := range devices {
		if d.MIG == nil || d.MIG.Profile == "" {
			continue
		}
		p := profiles[d.MIG.Profile]
		if p == nil {
			p = &profile{memory: d.TotalMemory >> 20, multiprocessors: d.Multiprocessors}
			profiles[d.MIG.Profile] = p
		}
		p.count++
	}
	for _, name := range slices.Sorted(maps.Keys(profiles)) {
		p, prefix := profiles[name], "mig-"+labelValue(name)
		label(prefix+".count", fmt.Sprint(p.count))
		label(prefix+".memory", fmt.Sprint(p.memory))
		label(prefix+".multiprocessors", fmt.Sprint(p.multiprocessors))
	}
}

// promMetrics renders the node_exporter textfile metrics.
func promMetrics(r report, now time.Time) []byte {
	var b bytes.Buffer
	gauge := func(name, help string) { fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name) }
	success := 0
	if r.verdict() == "ok" {
		success = 1
	}
	gauge("gpuinit_probe_success", "Whether GPU bring-up and every re-entrant scenario worked on this node (1) or not (0).")
	fmt.Fprintf(&b, "gpuinit_probe_success{backend=%q,verdict=%q} %d\n", r.Backend, r.verdict(), success)
	gauge("gpuinit_scenario_duration_seconds", "How long each re-entrant scenario's child process took, by verdict.")
	for _, s := range r.Scenarios {
		fmt.Fprintf(&b, "gpuinit_scenario_duration_seconds{scenario=%q,verdict=%q} %g\n", s.Name, s.Verdict, s.DurationMillis/1000)
	}
	gauge("gpuinit_init_duration_seconds", "How long the GPU runtime's initialization took.")
	fmt.Fprintf(&b, "gpuinit_init_duration_seconds{backend=%q} %g\n", r.Backend, r.InitMillis/1000)
	gauge("gpuinit_devices", "How many GPUs the driver reported; 0 where the node has none to probe.")
	devices := len(r.Devices)
	if r.noGPU() {
		devices = 0 // sim's devices are no GPUs of this node's
	}
	fmt.Fprintf(&b, "gpuinit_devices{backend=%q} %d\n", r.Backend, devices)
	gauge("gpuinit_driver_version", "The driver's version (CUDA: 12040 for 12.4); 0 where unknown.")
	fmt.Fprintf(&b, "gpuinit_driver_version{backend=%q} %d\n", r.Backend, r.DriverVersion)
	gauge("gpuinit_init_failure", "The GPU runtime's initialization failed, by class (no-gpu, not-yet, needs-operator): 1 for the class it failed with.")
	for _, c := range []device.Class{device.NoGPUHere, device.NotYet, device.NeedsOperator} {
		v := 0
		if r.Class == c.String() {
			v = 1
		}
		fmt.Fprintf(&b, "gpuinit_init_failure{backend=%q,class=%q} %d\n", r.Backend, c, v)
	}
	if r.BringUp != nil {
		gauge("gpuinit_preflight_attempts", "How many preflight children the bring-up ran.")
		fmt.Fprintf(&b, "gpuinit_preflight_attempts{backend=%q} %d\n", r.Backend, r.BringUp.Attempts)
	}
	if !r.noGPU() {
		deviceMetrics(&b, r, gauge)
	}
	gauge("gpuinit_probe_timestamp_seconds", "When the probe ran, in seconds since the epoch.")
	fmt.Fprintf(&b, "gpuinit_probe_timestamp_seconds %d\n", now.Unix())
	return b.Bytes()
}

// writeAtomically writes data to path through a temporary file in the same
// directory and a rename, so that a reader sees the old file or the new one,
// never part of one.
func writeAtomically(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// oneShotTTL is how long the labels of a single run (no -interval) last.
const oneShotTTL = time.Hour

// writeFleetFiles writes the files cfg asks for, from r, at now; the labels
// expire ttl after now. Each file is written whatever became of the other, so
// that a feature file that cannot be written does not leave stale metrics
// (gpuinit_probe_success 1 from a round long gone) in place; the error joins
// both failures.
func writeFleetFiles(cfg config, r report, now time.Time, ttl time.Duration) error {
	var errs []error
	if cfg.nfdFile != "" {
		if err := writeAtomically(cfg.nfdFile, nfdFeatures(r, now, ttl)); err != nil {
			errs = append(errs, fmt.Errorf("writing the NFD feature file: %w", err))
		}
	}
	if cfg.promFile != "" {
		if err := writeAtomically(cfg.promFile, promMetrics(r, now)); err != nil {
			errs = append(errs, fmt.Errorf("writing the Prometheus textfile: %w", err))
		}
	}
	return errors.Join(errs...)
}

// publish settles r's verdict, writes the fleet files from it, and records a
// failure to write them in r: on stderr, as r's error (kind fleet-files)
// unless the probe had failed already, and as an exit status of at least 1.
// The files say the verdict of the probe, not of their own writing.
func publish(cfg config, r *report, now time.Time, ttl time.Duration, stderr io.Writer) {
	r.Verdict = r.verdict()
	err := writeFleetFiles(cfg, *r, now, ttl)
	if err == nil {
		return
	}
	fmt.Fprintln(stderr, "gpuprobe:", err)
	if r.Error == nil {
		r.Error = &errorInfo{Kind: "fleet-files", Message: err.Error()}
	}
	r.ExitCode = max(r.ExitCode, exitFailed)
}
