package main

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// promSample is one sample line of the text exposition format.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

// promFamily is one family: its HELP, its TYPE and its samples.
type promFamily struct {
	name, help, typ string
	samples         []promSample
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelKey   = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*`)
)

// parseProm parses data strictly as the text exposition format (0.0.4) that
// Prometheus' Go client writes: valid UTF-8 ending in a newline; each
// family's HELP, then its TYPE, then its samples, no family twice; label
// values with the format's three escapes only; no label and no series twice;
// each value in the client's own spelling (formatFloat's), so that it parses
// back to the value it was written from.
func parseProm(data []byte) ([]promFamily, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("not UTF-8")
	}
	text, ok := strings.CutSuffix(string(data), "\n")
	if !ok {
		return nil, fmt.Errorf("does not end in a newline")
	}
	var fams []promFamily
	names, series := map[string]bool{}, map[string]bool{}
	for n, line := range strings.Split(text, "\n") {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("line %d %q: %s", n+1, line, fmt.Sprintf(format, args...))
		}
		switch {
		case strings.HasPrefix(line, "# HELP "):
			name, help, _ := strings.Cut(line[len("# HELP "):], " ")
			if !metricName.MatchString(name) || names[name] {
				return nil, fail("a bad or repeated family name")
			}
			unescaped, err := unescape(help, false)
			if err != nil {
				return nil, fail("%v", err)
			}
			names[name] = true
			fams = append(fams, promFamily{name: name, help: unescaped})
		case strings.HasPrefix(line, "# TYPE "):
			name, typ, _ := strings.Cut(line[len("# TYPE "):], " ")
			if len(fams) == 0 || fams[len(fams)-1].name != name || fams[len(fams)-1].typ != "" || typ != "gauge" {
				return nil, fail("a TYPE not right after its family's HELP, or not gauge")
			}
			fams[len(fams)-1].typ = typ
		default:
			s, err := parseSample(line)
			if err != nil {
				return nil, fail("%v", err)
			}
			if len(fams) == 0 || fams[len(fams)-1].name != s.name || fams[len(fams)-1].typ == "" {
				return nil, fail("a sample outside its family")
			}
			keys := slices.Sorted(func(yield func(string) bool) {
				for k, v := range s.labels {
					if !yield(k + "=" + v) {
						return
					}
				}
			})
			key := s.name + "{" + strings.Join(keys, "\x00") + "}"
			if series[key] {
				return nil, fail("a series written twice")
			}
			series[key] = true
			fams[len(fams)-1].samples = append(fams[len(fams)-1].samples, s)
		}
	}
	return fams, nil
}

// parseSample parses name{label="value",...} value.
func parseSample(line string) (promSample, error) {
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return promSample{}, fmt.Errorf("no value")
	}
	s := promSample{name: line[:i], labels: map[string]string{}}
	if !metricName.MatchString(s.name) {
		return s, fmt.Errorf("bad metric name")
	}
	rest := line[i:]
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		for {
			key := labelKey.FindString(rest)
			if key == "" || !strings.HasPrefix(rest[len(key):], `="`) {
				return s, fmt.Errorf("bad label at %q", rest)
			}
			rest = rest[len(key)+2:]
			end := closingQuote(rest)
			if end < 0 {
				return s, fmt.Errorf("unterminated label value")
			}
			v, err := unescape(rest[:end], true)
			if err != nil {
				return s, err
			}
			if _, dup := s.labels[key]; dup {
				return s, fmt.Errorf("label %s twice", key)
			}
			s.labels[key] = v
			rest = rest[end+1:]
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			if !strings.HasPrefix(rest, ",") {
				return s, fmt.Errorf("want , or } at %q", rest)
			}
			rest = rest[1:]
		}
	}
	num, ok := strings.CutPrefix(rest, " ")
	if !ok {
		return s, fmt.Errorf("want one space before the value")
	}
	switch num {
	case "NaN":
		s.value = math.NaN()
	case "+Inf":
		s.value = math.Inf(1)
	case "-Inf":
		s.value = math.Inf(-1)
	default:
		v, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return s, err
		}
		s.value = v
	}
	if formatFloat(s.value) != num {
		return s, fmt.Errorf("value %q is not in the client's spelling %q", num, formatFloat(s.value))
	}
	return s, nil
}

// closingQuote is the index of the first unescaped " in s, or -1.
func closingQuote(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// unescape undoes the format's escapes: \\ and \n, and in a label value \".
func unescape(s string, label bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if label && (c == '"' || c == '\n') || !label && c == '\n' {
			return "", fmt.Errorf("a raw %q", c)
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i++; i == len(s) {
			return "", fmt.Errorf("a trailing backslash")
		}
		switch {
		case s[i] == '\\':
			b.WriteByte('\\')
		case s[i] == 'n':
			b.WriteByte('\n')
		case s[i] == '"' && label:
			b.WriteByte('"')
		default:
			return "", fmt.Errorf("an escape the format has not: \\%c", s[i])
		}
	}
	return b.String(), nil
}

// family returns the family named name in fams, failing t without it.
func family(t *testing.T, fams []promFamily, name string) promFamily {
	t.Helper()
	for _, f := range fams {
		if f.name == name {
			return f
		}
	}
	t.Fatalf("no family %s", name)
	return promFamily{}
}

// series says a family's samples as name{k=v,...}=value lines, labels
// sorted, for comparing.
func series(f promFamily) []string {
	var out []string
	for _, s := range f.samples {
		var ls []string
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range s.labels {
				if !yield(k) {
					return
				}
			}
		}) {
			ls = append(ls, k+"="+s.labels[k])
		}
		out = append(out, fmt.Sprintf("{%s}=%s", strings.Join(ls, ","), formatFloat(s.value)))
	}
	return out
}

func TestMetricsLabelWhatFailedWithTheBackendThatFailed(t *testing.T) {
	noGPU := func(backend string, version int) backendFailure {
		return backendFailure{Backend: backend, DriverVersion: version, Error: &errorInfo{Message: "no device", Kind: "no-device", Class: "no-gpu"}}
	}
	notYet := func(backend string) backendFailure {
		return backendFailure{Backend: backend, Error: &errorInfo{Message: "busy", Kind: "not-ready", Class: "not-yet"}}
	}
	simDevices := []deviceInfo{{Ordinal: 0, UUID: "GPU-a"}, {Ordinal: 1, UUID: "GPU-b"}}
	cases := []struct {
		name                           string
		r                              report
		devices, driverVersion, failed []string
	}{
		{"after a fallback to sim: each GPU backend that failed, none of sim's",
			report{Backend: "sim", Class: "no-gpu", ExitCode: exitOK, Devices: simDevices,
				Fallback: &fallback{Reason: "no usable GPU backend", Backends: []backendFailure{noGPU("cuda", 12040), notYet("hip")}}},
			[]string{"{backend=cuda}=0", "{backend=hip}=0"},
			[]string{"{backend=cuda}=12040", "{backend=hip}=0"},
			[]string{"{backend=cuda,class=no-gpu}=1", "{backend=hip,class=not-yet}=1"}},
		{"with -require-gpu and none usable: the backends auto passed over",
			report{Backend: "auto", Class: "no-gpu", ExitCode: exitUnavailable, PassedOver: []backendFailure{noGPU("cuda", 0), noGPU("hip", 0)}},
			[]string{"{backend=cuda}=0", "{backend=hip}=0"},
			[]string{"{backend=cuda}=0", "{backend=hip}=0"},
			[]string{"{backend=cuda,class=no-gpu}=1", "{backend=hip,class=no-gpu}=1"}},
		{"a named backend that failed: that one",
			report{Backend: "cuda", Class: "not-yet", ExitCode: exitUnavailable, DriverVersion: 12040},
			[]string{"{backend=cuda}=0"}, []string{"{backend=cuda}=12040"}, []string{"{backend=cuda,class=not-yet}=1"}},
		{"a GPU that works after auto passed one over: the one that works, no failure",
			report{Backend: "hip", ExitCode: exitOK, DriverVersion: 60032, Devices: simDevices, PassedOver: []backendFailure{noGPU("cuda", 0)}},
			[]string{"{backend=hip}=2"}, []string{"{backend=hip}=60032"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fams, err := parseProm(promMetrics(c.r, time.Unix(1e9, 0)))
			require.NoError(t, err)
			assert.Equal(t, c.devices, series(family(t, fams, "gpuinit_devices")))
			assert.Equal(t, c.driverVersion, series(family(t, fams, "gpuinit_driver_version")))
			var failed []string
			for _, s := range series(family(t, fams, "gpuinit_init_failure")) {
				if strings.HasSuffix(s, "=1") {
					failed = append(failed, s)
				}
			}
			assert.Equal(t, c.failed, failed, "the failures, by the backend that failed")
			assert.Len(t, family(t, fams, "gpuinit_init_failure").samples, 3*len(c.devices), "every class, for each backend")
		})
	}
}

func TestMetricsFormatFloatsAsPrometheusClientDoes(t *testing.T) {
	cases := []struct {
		name string
		f    float64
		want string
	}{
		{"a millisecond duration in seconds, without float noise", seconds(33.127), "0.033127"},
		{"a whole number", 2, "2"},
		{"zero", 0, "0"},
		{"negative zero is zero", math.Copysign(0, -1), "0"},
		{"large: an exponent", 1e21, "1e+21"},
		{"small: an exponent", seconds(0.001), "1e-06"},
		{"+Inf", math.Inf(1), "+Inf"},
		{"-Inf", math.Inf(-1), "-Inf"},
		{"NaN", math.NaN(), "NaN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, formatFloat(c.f)) })
	}
	r := report{Backend: "sim", InitMillis: 12.5, Scenarios: []scenarioResult{{Name: "queued", Verdict: "ok", DurationMillis: 33.127}}}
	out := string(promMetrics(r, time.Unix(1e9, 0)))
	assert.Contains(t, out, "gpuinit_scenario_duration_seconds{scenario=\"queued\",verdict=\"ok\"} 0.033127\n")
	assert.Contains(t, out, "gpuinit_init_duration_seconds{backend=\"sim\"} 0.0125\n")
}

func TestLabelValuesAreEscapedAsTheFormatSays(t *testing.T) {
	r := report{Backend: "sim", Devices: []deviceInfo{{Ordinal: 0, UUID: "tab\there \"quoted\" back\\slash\nnew é \xff"}}}
	fams, err := parseProm(promMetrics(r, time.Unix(1e9, 0)))
	require.NoError(t, err, "Go's %%q escapes are not the format's")
	got := family(t, fams, "gpuinit_device_verdict").samples[0].labels["uuid"]
	assert.Equal(t, "tab\there \"quoted\" back\\slash\nnew é \uFFFD", got)
}

// FuzzPromMetrics: whatever a report holds (the driver's names and UUIDs,
// any float), the metrics parse back strictly, each label value is the
// report's (made UTF-8), and each duration is its value in seconds.
func FuzzPromMetrics(f *testing.F) {
	f.Add("sim", "GPU-0", "queued", "ok", "xid 79", "reset-gpu", "canary", 33.127, 12.5, int64(3), false)
	f.Add("cuda", "GPU-\xff\"\\\n", "a\tb", "hang", "ecc \xfe", "drain", "", math.Inf(1), math.NaN(), int64(-1), true)
	f.Fuzz(func(t *testing.T, backend, uuid, scenario, verdict, event, recovery, source string, duration, initMs float64, count int64, fellBack bool) {
		r := report{Backend: backend, InitMillis: initMs, ExitCode: exitOK,
			Scenarios: []scenarioResult{{Name: scenario, Verdict: verdict, DurationMillis: duration}, {Name: scenario + "-2", Verdict: verdict}},
			Devices: []deviceInfo{
				{Ordinal: 0, UUID: uuid, Health: &health.DeviceHealth{Verdict: healthwatch.VerdictHealthy, Recovery: recovery,
					Counted: map[string]int64{event: count, event + "x": 1}}},
				{Ordinal: 1, UUID: uuid},
			},
			Lost:    []health.Lost{{Ordinal: 1, Source: source}},
			BringUp: &health.BringUp{Attempts: int(count)},
		}
		if fellBack {
			r.Class, r.Fallback = "no-gpu", &fallback{Backends: []backendFailure{{Backend: backend, Error: &errorInfo{Class: verdict}}}}
		}
		data := promMetrics(r, time.Unix(count, 0))
		fams, err := parseProm(data)
		require.NoError(t, err, "%s", data)
		valid := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
		for _, s := range family(t, fams, "gpuinit_scenario_duration_seconds").samples {
			assert.Equal(t, valid(verdict), s.labels["verdict"])
		}
		d := family(t, fams, "gpuinit_scenario_duration_seconds").samples[0]
		assert.Equal(t, valid(scenario), d.labels["scenario"])
		if want := seconds(duration); !math.IsNaN(want) {
			assert.Equal(t, want, d.value, "the duration parses back")
		}
		assert.Equal(t, valid(backend), family(t, fams, "gpuinit_probe_success").samples[0].labels["backend"])
		if !fellBack {
			v := family(t, fams, "gpuinit_device_verdict").samples[0]
			assert.Equal(t, valid(uuid), v.labels["uuid"])
			assert.Equal(t, valid(source), family(t, fams, "gpuinit_device_lost").samples[0].labels["source"])
		}
	})
}
