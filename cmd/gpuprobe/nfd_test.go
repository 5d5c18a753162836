package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Kubernetes' label syntax (apimachinery's validation): a key's name part,
// and a value, are at most 63 characters of [A-Za-z0-9_.-], beginning and
// ending with an alphanumeric; a value may be empty.
var (
	k8sName  = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	k8sValue = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`)
)

// parseNFD parses data strictly as the feature file NFD's local source
// reads, as gpuprobe writes it: comment lines, exactly one of them the
// "# +expiry-time=" directive in RFC 3339, and name=value lines whose name
// is gpuinit.io/ and a valid label name, whose value is a valid label
// value, no name twice. It returns the labels and the expiry.
func parseNFD(data []byte) (map[string]string, time.Time, error) {
	text, ok := strings.CutSuffix(string(data), "\n")
	if !ok {
		return nil, time.Time{}, fmt.Errorf("does not end in a newline")
	}
	labels := map[string]string{}
	var expiry time.Time
	expiries := 0
	for n, line := range strings.Split(text, "\n") {
		fail := func(what string) error { return fmt.Errorf("line %d %q: %s", n+1, line, what) }
		if d, ok := strings.CutPrefix(line, "# +expiry-time="); ok {
			t, err := time.Parse(time.RFC3339, d)
			if err != nil {
				return nil, time.Time{}, fail(err.Error())
			}
			expiry, expiries = t, expiries+1
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, time.Time{}, fail("no =")
		}
		name, ok := strings.CutPrefix(key, labelPrefix)
		switch {
		case !ok:
			return nil, time.Time{}, fail("not a gpuinit.io/ label")
		case len(name) > 63 || !k8sName.MatchString(name):
			return nil, time.Time{}, fail("not a label name")
		case len(value) > 63 || !k8sValue.MatchString(value):
			return nil, time.Time{}, fail("not a label value")
		}
		if _, dup := labels[key]; dup {
			return nil, time.Time{}, fail("a label twice")
		}
		labels[key] = value
	}
	if expiries != 1 {
		return nil, time.Time{}, fmt.Errorf("%d expiry directives, want 1", expiries)
	}
	return labels, expiry, nil
}

func TestLabelNamesFromTheDriverAreValidOrLeftOut(t *testing.T) {
	long := strings.Repeat("a", 80)
	cases := []struct {
		name    string
		devices []deviceInfo
		want    map[string]string // the arch and MIG labels
	}{
		{"an arch of nothing a label can hold is left out",
			[]deviceInfo{{Arch: "--"}, {Arch: "sm_90"}},
			map[string]string{"gpuinit.io/arch.sm_90": "true"}},
		{"a long arch is cut to 63",
			[]deviceInfo{{Arch: long}},
			map[string]string{"gpuinit.io/arch." + long[:58]: "true"}},
		{"archs that name alike, once cut to 63, are one label (found by FuzzNFDFeatures)",
			[]deviceInfo{{Arch: long}, {Arch: long + "x"}},
			map[string]string{"gpuinit.io/arch." + long[:58]: "true"}},
		{"a long MIG profile is cut so that its longest suffix fits",
			[]deviceInfo{{MIG: &driver.MIG{Profile: long}, TotalMemory: 10 << 30, Multiprocessors: 14}},
			map[string]string{"gpuinit.io/mig-" + long[:43] + ".count": "1", "gpuinit.io/mig-" + long[:43] + ".memory": "10240",
				"gpuinit.io/mig-" + long[:43] + ".multiprocessors": "14"}},
		{"profiles that name alike count as one",
			[]deviceInfo{{MIG: &driver.MIG{Profile: "3g.40gb+me"}}, {MIG: &driver.MIG{Profile: "3g.40gb me"}}},
			map[string]string{"gpuinit.io/mig-3g.40gb_me.count": "2", "gpuinit.io/mig-3g.40gb_me.memory": "0",
				"gpuinit.io/mig-3g.40gb_me.multiprocessors": "0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := report{Backend: "cuda", ExitCode: exitOK, Devices: c.devices}
			labels, _, err := parseNFD(nfdFeatures(r, time.Unix(1e9, 0), time.Hour))
			require.NoError(t, err)
			got := map[string]string{}
			for k, v := range labels {
				if strings.HasPrefix(k, "gpuinit.io/arch.") || strings.HasPrefix(k, "gpuinit.io/mig-") {
					got[k] = v
				}
			}
			assert.Equal(t, c.want, got)
		})
	}
}

// FuzzNFDFeatures: whatever a report holds (the driver's arch and MIG
// profile names, a backend's failure kind, any verdict), the feature file
// parses back strictly, with the verdict's label and the expiry it was
// written with.
func FuzzNFDFeatures(f *testing.F) {
	f.Add("cuda", "sm_90", "1g.10gb", "3g.40gb+me", "match", "no-device", 12040, int64(1e9), false)
	f.Add("\xff", "--", strings.Repeat("x", 70), "", "a=b", "", -1, int64(0), true)
	f.Fuzz(func(t *testing.T, backend, arch, profile1, profile2, rngVerdict, kind string, driverVersion int, unix int64, fellBack bool) {
		r := report{Backend: backend, DriverVersion: driverVersion, ExitCode: exitOK,
			Devices: []deviceInfo{
				{Ordinal: 0, Arch: arch, MIG: &driver.MIG{Profile: profile1}, TotalMemory: 10 << 30, Multiprocessors: 14},
				{Ordinal: 1, Arch: arch + "x", MIG: &driver.MIG{Profile: profile2}},
			},
			RNG: &rngResult{Verdict: rngVerdict},
		}
		if fellBack {
			r.Class = "no-gpu"
			r.Fallback = &fallback{Backends: []backendFailure{{Backend: "cuda", Error: &errorInfo{Kind: kind, Class: "no-gpu"}}}}
		}
		// time.Now's range: years 1970 to 9999, as RFC 3339 can say them.
		now := time.Unix(unix%253402300000, 0)
		if now.Before(time.Unix(0, 0)) {
			now = time.Unix(-unix%253402300000, 0)
		}
		data := nfdFeatures(r, now, time.Hour)
		labels, expiry, err := parseNFD(data)
		require.NoError(t, err, "%s", data)
		assert.Equal(t, labelValue(r.verdict()), labels["gpuinit.io/probe"])
		assert.True(t, now.Add(time.Hour).Truncate(time.Second).Equal(expiry), "the expiry: %s", expiry)
		if !fellBack {
			assert.Equal(t, labelValue(backend), labels["gpuinit.io/backend"])
		}
	})
}
