package visibility

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// describe renders a Spec's selectors for comparison: "3" for an index,
// "gpu-uuid GPU-…", "mig-uuid MIG-…", "mig-instance GPU-…/1/2".
func describe(s Spec) []string {
	var out []string
	for _, sel := range s.Selectors {
		switch sel.Kind {
		case Index:
			out = append(out, fmt.Sprint(sel.Index))
		case MIGInstance:
			out = append(out, fmt.Sprintf("%s %s/%d/%d", sel.Kind, sel.UUID, sel.GI, sel.CI))
		default:
			out = append(out, fmt.Sprintf("%s %s", sel.Kind, sel.UUID))
		}
	}
	return out
}

func TestParseCUDA(t *testing.T) {
	const full = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"
	for _, tc := range []struct {
		name, value string
		want        []string // nil: CUDA sees no device
		reason      string   // a part of Spec.Reason, when the list is cut
	}{
		{name: "one index", value: "0", want: []string{"0"}},
		{name: "indices keep the order written", value: "2,1", want: []string{"2", "1"}},
		{name: "blanks around indices are ignored", value: " 0 ,\t1 ", want: []string{"0", "1"}},
		{name: "text after the digits is ignored", value: "1gpu2,2ampere", want: []string{"1", "2"}},
		{name: "a negative entry ends the list", value: "0, 1, 2, -1, 3", want: []string{"0", "1", "2"}, reason: `entry 4 " -1" is negative`},
		{name: "the CUDA guide's 0,2,-1,1 is 0 and 2", value: "0,2,-1,1", want: []string{"0", "2"}},
		{name: "1,-1,0 is 1", value: "1,-1,0", want: []string{"1"}},
		{name: "a repeated index empties the list", value: "0,1,0", reason: "entry 3 \"0\" repeats entry 1"},
		{name: "PyTorch's 0, 1, 2, 1 is empty", value: "0, 1, 2, 1"},
		{name: "a repeat is by value", value: "0,00"},
		{name: "minus zero is zero and repeats it", value: "0,-0"},
		{name: "a repeat after the end does not count", value: "0,x,0", want: []string{"0"}},
		{name: "unary plus and minus zero", value: "2, +3, -0, 5", want: []string{"2", "3", "0", "5"}},
		{name: "leading zeros are decimal", value: "010,007", want: []string{"10", "7"}},
		{name: "hex is read as its leading zero", value: "0x1", want: []string{"0"}},
		{name: "a word first is no device", value: "one,two,3,4", reason: `entry 1 "one" is not a number`},
		{name: "a word ends the list", value: "4,3,two,one", want: []string{"4", "3"}},
		{name: "an empty value is no device", value: "", reason: "empty"},
		{name: "an empty entry ends the list", value: "0,,1", want: []string{"0"}},
		{name: "a trailing comma ends the list", value: "0,", want: []string{"0"}},
		{name: "a lone sign is not a number", value: "+,1"},
		{name: "a sign before a blank is not a number", value: "+ 1"},
		{name: "two signs are not a number", value: "--1"},
		{name: "a UUID after indices ends the list", value: "0,GPU-9e8d35e3", want: []string{"0"}},
		{name: "a huge index stands", value: "99999999999999999999", want: []string{fmt.Sprint(math.MaxInt)}},
		{name: "numbers past 2^64 saturate and so repeat", value: "18446744073709551616,18446744073709551617"},
		{name: "a GPU UUID prefix", value: "GPU-9e8d35e3", want: []string{"gpu-uuid GPU-9e8d35e3"}},
		{name: "a full GPU UUID", value: full, want: []string{"gpu-uuid " + full}},
		{name: "GPU UUIDs keep the order written", value: "GPU-e4,GPU-9e8d35e3", want: []string{"gpu-uuid GPU-e4", "gpu-uuid GPU-9e8d35e3"}},
		{name: "an index after GPU UUIDs ends the list", value: "GPU-123, 2", want: []string{"gpu-uuid GPU-123"}, reason: "does not start with GPU-"},
		{name: "a blank before a later UUID ends the list", value: "GPU-a, GPU-b", want: []string{"gpu-uuid GPU-a"}},
		{name: "a value starting with a blank is read as indices", value: " GPU-a"},
		{name: "lower-case gpu- is not a UUID", value: "gpu-9e8d35e3"},
		{name: "a repeated UUID empties the list", value: "GPU-a,GPU-b,GPU-a", reason: "repeats entry 1"},
		{name: "a repeated UUID after the end does not count", value: "GPU-a,x,GPU-a", want: []string{"gpu-uuid GPU-a"}},
		{name: "a MIG UUID", value: "MIG-89c850dc", want: []string{"mig-uuid MIG-89c850dc"}},
		{name: "the pre-R470 MIG form", value: "MIG-" + full + "/1/2", want: []string{"mig-instance " + full + "/1/2"}},
		{name: "a malformed pre-R470 form is a MIG UUID that names nothing", value: "MIG-GPU-abc/1", want: []string{"mig-uuid MIG-GPU-abc/1"}},
		{name: "a GPU UUID ends a MIG list", value: "MIG-a,GPU-b", want: []string{"mig-uuid MIG-a"}},
		{name: "a MIG UUID ends a GPU list", value: "GPU-a,MIG-b", want: []string{"gpu-uuid GPU-a"}},
		{name: "a repeated MIG device empties the list", value: "MIG-a,MIG-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ParseCUDA(tc.value)
			assert.True(t, s.Set)
			assert.Equal(t, CUDA, s.Runtime)
			assert.Equal(t, EnvCUDA, s.Var)
			assert.Equal(t, tc.want, describe(s))
			assert.Equal(t, tc.want == nil, s.None())
			assert.Contains(t, s.Reason, tc.reason)
			if tc.reason == "" && tc.want != nil && len(tc.want) == len(strings.Split(tc.value, ",")) {
				assert.Empty(t, s.Reason, "every entry stands")
			}
		})
	}
}

func TestLookupCUDATellsUnsetFromEmpty(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       map[string]string
		all, none bool
	}{
		{name: "unset is every device", env: map[string]string{}, all: true},
		{name: "set but empty is no device", env: map[string]string{EnvCUDA: ""}, none: true},
		{name: "set is read", env: map[string]string{EnvCUDA: "1"}},
		{name: "HIP's variable is not CUDA's", env: map[string]string{EnvHIP: ""}, all: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := LookupCUDA(mapEnv(tc.env))
			assert.Equal(t, tc.all, s.All())
			assert.Equal(t, tc.none, s.None())
			assert.Equal(t, EnvCUDA, s.Var)
		})
	}
}

// mapEnv is a Getenv over m.
func mapEnv(m map[string]string) Getenv {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// fuzzNVIDIAHost is a host of n GPUs (PyTorch's UUIDs, two models), the
// first of them in MIG mode with two MIG devices when mig is set.
func fuzzNVIDIAHost(n int, mig bool) []Physical {
	devices := eightGPUs()[:n]
	for i := range devices {
		devices[i].Speed = i % 2
	}
	if mig && n > 0 {
		devices[0].MIGEnabled = true
		devices[0].MIG = []MIGDevice{
			{UUID: "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f", GI: 1, CI: 0},
			{UUID: "MIG-c6d4f1ef-0000-5de3-91c7-45d71c87eb3f", GI: 2, CI: 0},
		}
	}
	return devices
}

// FuzzParseCUDA checks ParseCUDA and Map on any value: the same Spec each
// time, entries taken in order from the value, indices never negative, a
// cut list saying why; and Map's ordinals counted from 0, each a device of
// the host, none twice, nothing where NoDevice says nothing.
func FuzzParseCUDA(f *testing.F) {
	for _, v := range []string{"", "0", "0,1", "0,0", "-1", "-2", "gpu0", "1gpu2,0", "GPU-", "GPU-9e8d35e3,GPU-e4",
		"MIG-unknown", "MIG-c6d4f1ef", "MIG-GPU-9942190a-aa31-4ff1-4aa9-c388d80f85f1/1/0", " 1, +2,-0", "18446744073709551616"} {
		f.Add(v, uint8(2), true)
	}
	f.Fuzz(func(t *testing.T, value string, gpus uint8, mig bool) {
		s := ParseCUDA(value)
		if !reflect.DeepEqual(s, ParseCUDA(value)) {
			t.Fatalf("%q parses two ways", value)
		}
		if !s.Set || s.Runtime != CUDA || s.Var != EnvCUDA || s.Value != value {
			t.Fatalf("%q: %+v", value, s)
		}
		entries := strings.Split(value, ",")
		if len(s.Selectors) > len(entries) {
			t.Fatalf("%q: %d selectors of %d entries", value, len(s.Selectors), len(entries))
		}
		for i, sel := range s.Selectors {
			if sel.Text != entries[i] || sel.Kind == Index && sel.Index < 0 {
				t.Fatalf("%q: selector %d is %+v", value, i, sel)
			}
		}
		if len(s.Selectors) < len(entries) && s.Reason == "" {
			t.Fatalf("%q: the list is cut with no reason", value)
		}
		n := int(gpus % 9)
		devices := fuzzNVIDIAHost(n, mig)
		none, why := s.NoDevice(n)
		if none == (why == "") {
			t.Fatalf("%q: NoDevice says %v, %q", value, none, why)
		}
		for _, rule := range []MIGRule{MIGOneDevice, MIGOnePerInstance} {
			for _, order := range []string{"", OrderPCIBusID} {
				got, err := rule.Map(s, devices, order)
				if err != nil {
					t.Fatalf("%q: %v", value, err)
				}
				checkEntries(t, value, got, devices)
				if none && len(got) > 0 {
					t.Fatalf("%q on %d GPUs: NoDevice says none (%s), %s finds %v", value, n, why, rule, got)
				}
			}
		}
	})
}

// checkEntries checks a runtime's enumeration: ordinals 0, 1, … in order,
// each a device of devices (or a MIG device of one), none twice.
func checkEntries(t *testing.T, value string, got []Entry, devices []Physical) {
	t.Helper()
	known := map[string]bool{}
	for _, d := range devices {
		known[d.UUID] = true
		for _, m := range d.MIG {
			known[m.UUID] = true
		}
	}
	seen := map[string]bool{}
	for i, e := range got {
		if e.Ordinal != i || !known[e.UUID()] || seen[e.UUID()] {
			t.Fatalf("%q: entry %d is %v, of %v", value, i, e, got)
		}
		seen[e.UUID()] = true
	}
}
