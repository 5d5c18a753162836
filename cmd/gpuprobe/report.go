package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/gpuinit/gpuinit/device/health"
)

// schema names the JSON layout; fields are only ever added within a version.
const schema = "gpuprobe/v1"

// report is what gpuprobe found. Its JSON form is documented in doc.go.
type report struct {
	Schema         string            `json:"schema"`
	Backend        string            `json:"backend"`
	Discipline     string            `json:"discipline"`
	DriverVersion  int               `json:"driver_version,omitempty"`
	RuntimeVersion int               `json:"runtime_version,omitempty"`
	InitMillis     float64           `json:"init_ms"`
	Devices        []deviceInfo      `json:"devices"`
	DeviceMap      *deviceMap        `json:"device_map,omitempty"`
	Visibility     map[string]string `json:"visibility,omitempty"`
	// PassedOver lists the GPU backends auto tried and passed over: those
	// before its choice, or with -require-gpu and none usable, every one.
	PassedOver []backendFailure `json:"passed_over,omitempty"`
	// Class is the GPU runtime's failure class (no-gpu, not-yet,
	// needs-operator), where it failed; BringUp says how its preflight
	// attempts went.
	Class       string           `json:"class,omitempty"`
	BringUp     *health.BringUp  `json:"bring_up,omitempty"`
	Fallback    *fallback        `json:"fallback,omitempty"`
	Scenarios   []scenarioResult `json:"scenarios"`
	RNG         *rngResult       `json:"rng,omitempty"`
	Lost        []health.Lost    `json:"lost,omitempty"` // devices lost while probed: by the canary, a deadline, the health watch
	Error       *errorInfo       `json:"error,omitempty"`
	Interrupted string           `json:"interrupted,omitempty"` // the signal, when one stopped the probe
	// Verdict is the node's one word, as the NFD label gpuinit.io/probe and
	// gpuinit_probe_success say it: after a fallback to sim it is the GPU
	// runtime's class though the exit status is 0.
	Verdict  string `json:"verdict"`
	ExitCode int    `json:"exit_code"`
}

// The device and error shapes are device/health's, so that gpuprobe's report
// and a server's status read alike.
type (
	deviceInfo = health.Device
	errorInfo  = health.Error
)

// fallback is why auto probed sim instead of a GPU.
type fallback struct {
	Reason   string           `json:"reason"`
	Backends []backendFailure `json:"backends"`
}

type backendFailure struct {
	Backend string `json:"backend"`
	// DriverVersion is what the backend's driver reported before it
	// failed; 0 (omitted) where it never loaded.
	DriverVersion int        `json:"driver_version,omitempty"`
	Error         *errorInfo `json:"error"`
}

type scenarioResult struct {
	Name           string  `json:"name"`
	Description    string  `json:"description"`
	Verdict        string  `json:"verdict"` // ok, hang or error
	DurationMillis float64 `json:"duration_ms"`
	Error          string  `json:"error,omitempty"`
	Dump           string  `json:"dump,omitempty"` // for a hang: the child's gpuinit goroutines
}

type rngResult struct {
	Seed          uint64    `json:"seed"`
	Offset        uint64    `json:"offset"`
	Count         int       `json:"count"`
	Ordering      string    `json:"ordering"` // curand or rocrand
	Verdict       string    `json:"verdict"`  // match, mismatch, unsupported or error
	FirstMismatch *mismatch `json:"first_mismatch,omitempty"`
	Error         string    `json:"error,omitempty"` // for unsupported: the reason
}

type mismatch struct {
	Index  int    `json:"index"`
	Device uint32 `json:"device"`
	Philox uint32 `json:"philox"`
}

// fail ends the report with an error and an exit status.
func (r *report) fail(exit int, info *errorInfo) {
	r.Error, r.ExitCode = info, exit
}

// markInterrupted records that sig stopped the probe: whatever else happened,
// the exit status is the shell's for that signal.
func (r *report) markInterrupted(sig os.Signal) {
	r.Interrupted = sig.String()
	r.ExitCode = exitSIGINT
	if sig == syscall.SIGTERM {
		r.ExitCode = exitSIGTERM
	}
	if r.Error == nil {
		r.Error = &errorInfo{Kind: "interrupted", Message: "interrupted by " + sig.String()}
	} else {
		r.Error.Kind = "interrupted"
	}
}

// writeReport prints r as cfg asks: JSON or text.
func writeReport(w io.Writer, cfg config, r report) {
	if cfg.json {
		writeJSON(w, r)
	} else {
		writeText(w, r)
	}
}

func writeJSON(w io.Writer, r report) {
	if r.Devices == nil {
		r.Devices = []deviceInfo{}
	}
	if r.Scenarios == nil {
		r.Scenarios = []scenarioResult{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(r)
}

func writeText(w io.Writer, r report) {
	fmt.Fprintf(w, "backend     %s (discipline %s)\n", r.Backend, r.Discipline)
	if fb := r.Fallback; fb != nil {
		fmt.Fprintf(w, "fallback    %s; passed over:\n", fb.Reason)
		writeFailures(w, fb.Backends)
	} else if len(r.PassedOver) > 0 {
		fmt.Fprintln(w, "passed over")
		writeFailures(w, r.PassedOver)
	}
	if r.DriverVersion != 0 {
		fmt.Fprintf(w, "driver      %d\n", r.DriverVersion)
	}
	if r.RuntimeVersion != 0 {
		fmt.Fprintf(w, "runtime     %d\n", r.RuntimeVersion)
	}
	if b := r.BringUp; b != nil && b.Preflight {
		fmt.Fprintf(w, "preflight   %d child(ren)", b.Attempts)
		if b.LastClass != "" {
			fmt.Fprintf(w, ", the last failed: %s", b.LastClass)
		}
		fmt.Fprintln(w)
	}
	if r.Class != "" {
		fmt.Fprintf(w, "class       %s\n", r.Class)
	}
	if r.Error != nil {
		fmt.Fprintf(w, "error       %s\n", r.Error.Message)
		if r.Error.Hint != "" && !strings.Contains(r.Error.Message, r.Error.Hint) {
			fmt.Fprintf(w, "hint        %s\n", r.Error.Hint)
		}
		fmt.Fprintf(w, "result      %s\n", resultLine(r))
		return
	}
	fmt.Fprintf(w, "init        %.1f ms\n", r.InitMillis)
	fmt.Fprintf(w, "devices     %d\n", len(r.Devices))
	for _, d := range r.Devices {
		writeDevice(w, d)
	}
	writeDeviceMap(w, r.DeviceMap)
	if len(r.Visibility) > 0 {
		names := make([]string, 0, len(r.Visibility))
		for n := range r.Visibility {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			fmt.Fprintf(w, "visibility  %s=%q\n", n, r.Visibility[n])
		}
	}
	fmt.Fprintln(w, "scenarios")
	for _, s := range r.Scenarios {
		fmt.Fprintf(w, "  %-5s %-32s %8.1f ms\n", s.Verdict, s.Name, s.DurationMillis)
		if s.Error != "" {
			fmt.Fprintf(w, "        %s\n", s.Error)
		}
		if s.Dump != "" {
			fmt.Fprintln(w, indent(s.Dump, "        | "))
		}
	}
	if g := r.RNG; g != nil {
		fmt.Fprintf(w, "rng         %s: %d values, seed %d, offset %d, %s ordering", g.Verdict, g.Count, g.Seed, g.Offset, g.Ordering)
		switch {
		case g.FirstMismatch != nil:
			fmt.Fprintf(w, "; value %d is %#08x on the device, %#08x in rng/philox", g.FirstMismatch.Index, g.FirstMismatch.Device, g.FirstMismatch.Philox)
		case g.Error != "":
			fmt.Fprintf(w, "; %s", g.Error)
		}
		fmt.Fprintln(w)
	}
	for _, l := range r.Lost {
		fmt.Fprintf(w, "lost        device %d (%s): %s\n", l.Ordinal, l.Source, l.Error.Message)
	}
	fmt.Fprintf(w, "result      %s\n", resultLine(r))
}

// writeFailures prints each backend passed over, with its driver's version
// where it read one.
func writeFailures(w io.Writer, backends []backendFailure) {
	for _, b := range backends {
		driver := ""
		if b.DriverVersion != 0 {
			driver = fmt.Sprintf("(driver %d) ", b.DriverVersion)
		}
		fmt.Fprintf(w, "  %-5s %s%s\n", b.Backend, driver, b.Error.Message)
	}
}

// resultLine is the text report's last word: the exit status's, and where
// the node's verdict (the label's) says otherwise, that too.
func resultLine(r report) string {
	word := resultWord(r.ExitCode)
	if r.ExitCode == exitOK && r.Verdict != "" && r.Verdict != "ok" {
		word += fmt.Sprintf(" on %s; this node's verdict (gpuinit.io/probe, gpuinit_probe_success): %s", r.Backend, r.Verdict)
	}
	return word
}

// writeDevice prints one device on two lines: what it is, then how to tell it
// from its neighbours.
func writeDevice(w io.Writer, d deviceInfo) {
	fmt.Fprintf(w, "  %d  %-28s %-8s %.1f GiB", d.Ordinal, d.Name, d.Arch, float64(d.TotalMemory)/(1<<30))
	if d.FreeMemory != nil {
		fmt.Fprintf(w, ", %.1f GiB free", float64(*d.FreeMemory)/(1<<30))
		if d.MemorySource != "" {
			fmt.Fprintf(w, " (%s)", d.MemorySource)
		}
	}
	fmt.Fprintln(w)
	var facts []string
	for _, f := range []struct{ label, value string }{
		{"uuid", d.UUID}, {"pci", d.PCIBusID}, {"cc", d.ComputeCapability},
	} {
		if f.value != "" {
			facts = append(facts, f.label+" "+f.value)
		}
	}
	if d.Multiprocessors != 0 {
		facts = append(facts, fmt.Sprintf("%d multiprocessors", d.Multiprocessors))
	}
	if d.Integrated {
		facts = append(facts, "integrated")
	}
	if m := d.MIG; m != nil {
		facts = append(facts, fmt.Sprintf("MIG %s of %s (GI %d, CI %d)", m.Profile, m.ParentUUID, m.GPUInstance, m.ComputeInstance))
	}
	if len(facts) > 0 {
		fmt.Fprintf(w, "     %s\n", strings.Join(facts, ", "))
	}
	if line := healthLine(d); line != "" {
		fmt.Fprintf(w, "     %s\n", line)
	}
}

// healthLine says what the health watch and the canary found of a device:
// "health watched, xid 13: 1; canary ok 0.1 ms".
func healthLine(d deviceInfo) string {
	var parts []string
	if h := d.Health; h != nil {
		s := "health watched"
		if !h.Watched {
			s = "health " + h.Why
		}
		for _, ev := range slices.Sorted(maps.Keys(h.Counted)) {
			s += fmt.Sprintf(", %s: %d", ev, h.Counted[ev])
		}
		if h.WatchError != "" {
			s += ", watch error: " + h.WatchError
		}
		parts = append(parts, s)
	}
	if c := d.Canary; c != nil {
		s := fmt.Sprintf("canary ok %.1f ms", c.TookMillis)
		if !c.OK {
			s = "canary FAILED: " + c.Error.Message
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func resultWord(code int) string {
	switch code {
	case exitOK:
		return "ok"
	case exitFailed:
		return "FAILED (exit 1)"
	case exitUnavailable:
		return "UNAVAILABLE (exit 3)"
	case exitSIGINT, exitSIGTERM:
		return fmt.Sprintf("INTERRUPTED (exit %d)", code)
	}
	return fmt.Sprintf("exit %d", code)
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

// trimError keeps the child's own error line, not the test-harness noise.
func trimError(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "error: ") {
			return strings.TrimPrefix(line, "error: ")
		}
	}
	s := strings.TrimSpace(stderr)
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	return s
}
