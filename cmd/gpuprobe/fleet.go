package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/internal/hangcheck"
)

// The fleet outputs: a Node Feature Discovery local-source feature file, whose
// lines NFD turns into node labels, and a node_exporter textfile-collector
// file of Prometheus metrics (nfd.go and metrics.go write them). Both say the
// same as the JSON report of the same run, and both are written atomically.

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
		return device.ClassNoGPUHere.String()
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
