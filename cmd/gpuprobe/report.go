package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// schema names the JSON layout; it changes only with a new version.
const schema = "gpuprobe/v1"

// report is what gpuprobe found. Its JSON form is documented in README.md.
type report struct {
	Schema         string           `json:"schema"`
	Backend        string           `json:"backend"`
	Discipline     string           `json:"discipline"`
	DriverVersion  int              `json:"driver_version,omitempty"`
	RuntimeVersion int              `json:"runtime_version,omitempty"`
	InitMillis     float64          `json:"init_ms"`
	Devices        []deviceInfo     `json:"devices"`
	Scenarios      []scenarioResult `json:"scenarios"`
	RNG            *rngResult       `json:"rng,omitempty"`
	Error          *errorInfo       `json:"error,omitempty"`
	ExitCode       int              `json:"exit_code"`
}

type deviceInfo struct {
	Ordinal     int    `json:"ordinal"`
	Name        string `json:"name"`
	Arch        string `json:"arch"`
	TotalMemory uint64 `json:"total_memory"`
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
	Error         string    `json:"error,omitempty"`
}

type mismatch struct {
	Index  int    `json:"index"`
	Device uint32 `json:"device"`
	Philox uint32 `json:"philox"`
}

type errorInfo struct {
	Message string `json:"message"`
	Kind    string `json:"kind,omitempty"` // no-device, not-compiled
	Code    int    `json:"code,omitempty"`
	Name    string `json:"name,omitempty"`
	Hint    string `json:"hint,omitempty"`
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
	if r.DriverVersion != 0 {
		fmt.Fprintf(w, "driver      %d\n", r.DriverVersion)
	}
	if r.RuntimeVersion != 0 {
		fmt.Fprintf(w, "runtime     %d\n", r.RuntimeVersion)
	}
	if r.Error != nil {
		fmt.Fprintf(w, "error       %s\n", r.Error.Message)
		if r.Error.Hint != "" && !strings.Contains(r.Error.Message, r.Error.Hint) {
			fmt.Fprintf(w, "hint        %s\n", r.Error.Hint)
		}
		fmt.Fprintf(w, "result      %s\n", resultWord(r.ExitCode))
		return
	}
	fmt.Fprintf(w, "init        %.1f ms\n", r.InitMillis)
	fmt.Fprintf(w, "devices     %d\n", len(r.Devices))
	for _, d := range r.Devices {
		fmt.Fprintf(w, "  %d  %-28s %-8s %.1f GiB\n", d.Ordinal, d.Name, d.Arch, float64(d.TotalMemory)/(1<<30))
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
	fmt.Fprintf(w, "result      %s\n", resultWord(r.ExitCode))
}

func resultWord(code int) string {
	switch code {
	case exitOK:
		return "ok"
	case exitFailed:
		return "FAILED (exit 1)"
	case exitUnavailable:
		return "UNAVAILABLE (exit 3)"
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
