package visibility

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseROCm(t *testing.T) {
	for _, tc := range []struct {
		name, variable, value string
		want                  []string // nil with set: no device
		unset                 bool     // the value reads as unset
		reason                string
	}{
		// ROCr: RvdFilter.
		{name: "ROCr: empty is no device", variable: EnvROCR, value: "", reason: "empty"},
		{name: "ROCr: indices", variable: EnvROCR, value: "0,2", want: []string{"0", "2"}},
		{name: "ROCr: entries are trimmed", variable: EnvROCR, value: "  1 ,\t0 ", want: []string{"1", "0"}},
		{name: "ROCr: strtol base 0 reads hex", variable: EnvROCR, value: "0x1", want: []string{"1"}},
		{name: "ROCr: strtol base 0 reads octal", variable: EnvROCR, value: "010", want: []string{"8"}},
		{name: "ROCr: 08 is not octal and ends the list", variable: EnvROCR, value: "08", reason: "not a whole number"},
		{name: "ROCr: text after digits ends the list", variable: EnvROCR, value: "0,1gpu", want: []string{"0"}},
		{name: "ROCr: a negative index ends the list", variable: EnvROCR, value: "1,-1,0", want: []string{"1"}, reason: "negative"},
		{name: "ROCr: -1 is no device", variable: EnvROCR, value: "-1"},
		{name: "ROCr: a plus sign is read", variable: EnvROCR, value: "+1", want: []string{"1"}},
		{name: "ROCr: 0x alone ends the list", variable: EnvROCR, value: "0x"},
		{name: "ROCr: an index narrows to 32 bits", variable: EnvROCR, value: "4294967296", want: []string{"0"}},
		{name: "ROCr: 2^31 narrows to a negative index", variable: EnvROCR, value: "2147483648"},
		{name: "ROCr: past LONG_MAX is LONG_MAX, -1 in 32 bits", variable: EnvROCR, value: "99999999999999999999"},
		{name: "ROCr: a UUID is upper-cased", variable: EnvROCR, value: "gpu-babaabba", want: []string{"gpu-uuid GPU-BABAABBA"}},
		{name: "ROCr: any entry starting G is a UUID", variable: EnvROCR, value: "garbage", want: []string{"gpu-uuid GARBAGE"}},
		{name: "ROCr: GPU- alone is too short", variable: EnvROCR, value: "GPU-", reason: "5 to 20"},
		{name: "ROCr: 17 hex digits are too long", variable: EnvROCR, value: "GPU-0123456789abcdef0"},
		{name: "ROCr: indices and UUIDs mix", variable: EnvROCR, value: "3,GPU-BABABABABABABABA,4", want: []string{"3", "gpu-uuid GPU-BABABABABABABABA", "4"}},
		{name: "ROCr: a repeat stands until Map ends the list there", variable: EnvROCR, value: "0,0", want: []string{"0", "0"}},
		{name: "ROCr: a trailing comma is no entry", variable: EnvROCR, value: "0,1,", want: []string{"0", "1"}},
		{name: "ROCr: an empty entry throws once reached", variable: EnvROCR, value: "0,,1", want: []string{"0"}, reason: "hsa_init fails"},
		// ROCclr: Device::init and flags.cpp.
		{name: "HIP: empty is no device", variable: EnvHIP, value: "", reason: "empty"},
		{name: "HIP: indices", variable: EnvHIP, value: "0,2", want: []string{"0", "2"}},
		{name: "HIP: quotes are removed", variable: EnvHIP, value: ` "0,1"  `, want: []string{"0", "1"}},
		{name: "HIP: quoted empty reads as unset", variable: EnvHIP, value: `""`, unset: true, reason: "unset"},
		{name: "HIP: one quote stays", variable: EnvHIP, value: `"0`},
		{name: "HIP: blanks are not trimmed", variable: EnvHIP, value: "0, 1", want: []string{"0"}, reason: `entry 2 " 1"`},
		{name: "HIP: leading zeros end the list", variable: EnvHIP, value: "01"},
		{name: "HIP: a plus sign ends the list", variable: EnvHIP, value: "+1"},
		{name: "HIP: text after digits ends the list", variable: EnvHIP, value: "1gpu"},
		{name: "HIP: a negative index ends the list", variable: EnvHIP, value: "1,-1,0", want: []string{"1"}},
		{name: "HIP: past int32 ends the list", variable: EnvHIP, value: "2147483648"},
		{name: "HIP: a repeat stands until Map skips it", variable: EnvHIP, value: "0,0,1", want: []string{"0", "0", "1"}},
		{name: "HIP: a UUID is any entry containing GPU-", variable: EnvHIP, value: "1,xGPU-ab", want: []string{"1", "gpu-uuid xGPU-ab"}},
		{name: "HIP: a trailing comma is no entry", variable: EnvHIP, value: "0,", want: []string{"0"}},
		{name: "HIP: an empty entry ends the list", variable: EnvHIP, value: "0,,1", want: []string{"0"}},
		{name: "HIP reads CUDA_VISIBLE_DEVICES by its own rules", variable: EnvCUDA, value: "1gpu2"},
		{name: "OpenCL's GPU_DEVICE_ORDINAL", variable: EnvOpenCL, value: "1,0", want: []string{"1", "0"}},
		{name: "another variable is not read", variable: "NVIDIA_VISIBLE_DEVICES", value: "0", unset: true, reason: "not a ROCm visibility variable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ParseROCm(tc.variable, tc.value)
			assert.Equal(t, tc.variable, s.Var)
			assert.Equal(t, tc.value, s.Value)
			assert.Equal(t, !tc.unset, s.Set)
			assert.Equal(t, tc.want, describe(s))
			assert.Contains(t, s.Reason, tc.reason)
			want := ROCclr
			if tc.variable == EnvROCR {
				want = ROCr
			}
			assert.Equal(t, want, s.Runtime)
		})
	}
}

func TestLookupROCmPrecedence(t *testing.T) {
	for _, tc := range []struct {
		name       string
		env        map[string]string
		rocr, hip  string // the variable each Spec is of
		rocrSet    bool
		hipSet     bool
		hipEntries []string
	}{
		{name: "nothing set filters nothing", env: map[string]string{}, rocr: EnvROCR, hip: EnvHIP},
		{name: "ROCR_VISIBLE_DEVICES is ROCr's", env: map[string]string{EnvROCR: "1"}, rocr: EnvROCR, rocrSet: true, hip: EnvHIP},
		{name: "HIP_VISIBLE_DEVICES wins over CUDA_VISIBLE_DEVICES", env: map[string]string{EnvHIP: "1", EnvCUDA: "0"},
			rocr: EnvROCR, hip: EnvHIP, hipSet: true, hipEntries: []string{"1"}},
		{name: "CUDA_VISIBLE_DEVICES where HIP_VISIBLE_DEVICES is unset", env: map[string]string{EnvCUDA: "0"},
			rocr: EnvROCR, hip: EnvCUDA, hipSet: true, hipEntries: []string{"0"}},
		{name: "an empty HIP_VISIBLE_DEVICES still wins: no device", env: map[string]string{EnvHIP: "", EnvCUDA: "0"},
			rocr: EnvROCR, hip: EnvHIP, hipSet: true},
		{name: "a quoted empty HIP_VISIBLE_DEVICES falls through", env: map[string]string{EnvHIP: `""`, EnvCUDA: "0"},
			rocr: EnvROCR, hip: EnvCUDA, hipSet: true, hipEntries: []string{"0"}},
		{name: "HIP does not read GPU_DEVICE_ORDINAL", env: map[string]string{EnvOpenCL: "1"}, rocr: EnvROCR, hip: EnvHIP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rocr, hip := LookupROCm(mapEnv(tc.env))
			assert.Equal(t, tc.rocr, rocr.Var)
			assert.Equal(t, ROCr, rocr.Runtime)
			assert.Equal(t, tc.rocrSet, rocr.Set)
			assert.Equal(t, tc.hip, hip.Var)
			assert.Equal(t, ROCclr, hip.Runtime)
			assert.Equal(t, tc.hipSet, hip.Set)
			assert.Equal(t, tc.hipEntries, describe(hip))
		})
	}
}

func TestAMDUUIDIsWhatROCrReports(t *testing.T) {
	assert.Equal(t, "GPU-00000000deadbeef", AMDUUID(0xdeadbeef))
	assert.Equal(t, "GPU-babababababababa", AMDUUID(0xBABABABABABABABA))
	assert.Equal(t, "GPU-XX", AMDUUID(0), "a GPU without a unique id")
}

// fuzzAMDHost is a host of n GPUs, numbered by KFD node from 1, the last
// without a unique id (GPU-XX) where there are two or more.
func fuzzAMDHost(n int) []Physical {
	devices := make([]Physical, n)
	for i := range devices {
		devices[i] = Physical{UUID: AMDUUID(0x4c2a9e8d35e30000 + uint64(i)*0x1111), Index: i + 1}
	}
	if n >= 2 {
		devices[n-1].UUID = AMDUUID(0)
	}
	return devices
}

// FuzzParseROCm checks ParseROCm, LookupROCm and MapROCm on any values of
// ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES (or CUDA_VISIBLE_DEVICES, or
// GPU_DEVICE_ORDINAL): one Spec each time, indices never negative, a cut
// list saying why; MapROCm fails only as ErrInitFails, and its ordinals count
// from 0, each a device of the host, none twice, nothing where NoDevice says
// nothing.
func FuzzParseROCm(f *testing.F) {
	for _, v := range [][2]string{{"", "0"}, {"0,1", "1"}, {"0,,1", ""}, {",0", "0"}, {"GPU-4C2A", "GPU-4c2a"}, {"-2", "-2"},
		{"gpu0", "gpu0"}, {"0x1", `"0,1"`}, {"garbage", "xGPU-ab"}, {"GPU-XX", "GPU-XX"}, {"010", "01"}} {
		f.Add(v[0], v[1], uint8(3), uint8(1))
	}
	f.Fuzz(func(t *testing.T, rocrValue, hipValue string, gpus, which uint8) {
		name := []string{EnvHIP, EnvCUDA, EnvOpenCL}[which%3]
		rocr, hip := ParseROCm(EnvROCR, rocrValue), ParseROCm(name, hipValue)
		if !reflect.DeepEqual(rocr, ParseROCm(EnvROCR, rocrValue)) || !reflect.DeepEqual(hip, ParseROCm(name, hipValue)) {
			t.Fatalf("%q, %q parse two ways", rocrValue, hipValue)
		}
		for _, s := range []Spec{rocr, hip} {
			for i, sel := range s.Selectors {
				if sel.Kind == Index && sel.Index < 0 || sel.Kind != Index && sel.Kind != GPUUUID {
					t.Fatalf("%s=%q: selector %d is %+v", s.Var, s.Value, i, sel)
				}
			}
			written := s.Value
			if s.Runtime == ROCclr {
				written = removeQuotes(written)
			}
			if s.Set && len(s.Selectors) < len(strings.Split(strings.TrimSuffix(written, ","), ",")) && s.Reason == "" {
				t.Fatalf("%s=%q: the list is cut with no reason", s.Var, s.Value)
			}
		}
		n := int(gpus % 6)
		devices := fuzzAMDHost(n)
		got, err := MapROCm(rocr, hip, devices)
		if err != nil && !errors.Is(err, ErrInitFails) {
			t.Fatalf("%q, %s=%q: %v", rocrValue, name, hipValue, err)
		}
		checkEntries(t, rocrValue+" / "+hipValue, got, devices)
		for _, s := range []Spec{rocr, hip} {
			if none, why := s.NoDevice(n); none && len(got) > 0 {
				t.Fatalf("%s=%q on %d GPUs: NoDevice says none (%s), MapROCm finds %v", s.Var, s.Value, n, why, got)
			}
		}
		env := map[string]string{EnvROCR: rocrValue, name: hipValue}
		lr, lh := LookupROCm(mapEnv(env))
		if !reflect.DeepEqual(lr, rocr) || name == EnvHIP && hip.Set && !reflect.DeepEqual(lh, hip) {
			t.Fatalf("LookupROCm(%v) reads %+v, %+v", env, lr, lh)
		}
	})
}
