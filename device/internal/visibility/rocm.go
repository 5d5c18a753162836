package visibility

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The ROCm rules below are read from source: ROCr's RvdFilter
// (ROCm/ROCR-Runtime runtime/hsa-runtime/core/runtime/amd_filter_device.cpp
// at c7785a6, unchanged in ROCm/rocm-systems projects/rocr-runtime at
// 92bf721) and ROCclr's Device::init (ROCm/clr rocclr/device/rocm/rocdevice.cpp
// at f9f995c, unchanged in rocm-systems projects/clr at 01280b9), with the
// flag reader rocclr/utils/flags.cpp. ROCm's "GPU isolation techniques" page
// documents the variables but not these details.
//
// Precedence (amd_topology.cpp and rocdevice.cpp): ROCr applies
// ROCR_VISIBLE_DEVICES inside hsa_init, to the KFD topology's GPU nodes in
// node order; ROCclr then applies, for HIP, HIP_VISIBLE_DEVICES, or
// CUDA_VISIBLE_DEVICES when HIP_VISIBLE_DEVICES reads as empty, and for
// OpenCL GPU_DEVICE_ORDINAL, indexing the GPUs ROCr left. ROCm's docs say
// GPU_DEVICE_ORDINAL applies to HIP too; ROCclr's code reads it only when
// the runtime is not HIP, and the code is followed here.

// ParseROCm reads a set ROCm visibility variable: ROCR_VISIBLE_DEVICES as
// ROCr does, HIP_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES (as HIP reads it) and
// GPU_DEVICE_ORDINAL as ROCclr does. LookupROCm applies the precedence.
//
// ROCr (RvdFilter): an empty value shows no device. Entries are split at
// commas, upper-cased and trimmed. An entry starting 'G' is a UUID of 5 to 20
// characters ("GPU-" and up to 16 hex digits) matched as a prefix, case
// aside; else it is read whole by strtol in base 0, so "0x1" is 1, "010" is
// 8, "08" and "1gpu" end the list. A negative index, an index out of range, a
// UUID that matches no device or two, and a repeated device all end the list
// (a repeat does not empty it, unlike CUDA). ROCr reads no more entries than
// there are GPUs. An empty entry ("0,,1") that ROCr reaches makes it call
// at(0) on an empty string, which throws: hsa_init's catch returns
// HSA_STATUS_ERROR, and no ROCm runtime starts (MapROCm's ErrInitFails).
//
// ROCclr: the value has one pair of surrounding quotes removed, and an
// empty variable reads as " " (flags.cpp), so a set but empty variable shows
// no device while a quoted empty one ("") reads as unset. Entries are split
// at commas and not trimmed. An entry containing "GPU-" (HIP 6.2 and later)
// is replaced by the index of the first GPU whose UUID contains it, with no
// ambiguity check; then the entry must be exactly a decimal index ("0", "12";
// not " 1", "+1", "01", "1gpu") below the device count, or the list ends. A
// repeated index is skipped, not an error.
func ParseROCm(name, value string) Spec {
	switch name {
	case EnvROCR:
		return parseROCr(value)
	case EnvHIP, EnvCUDA, EnvOpenCL:
		return parseROCclr(name, value)
	}
	s := Unset(ROCclr, name)
	s.Value = value
	s.Reason = fmt.Sprintf("%s is not a ROCm visibility variable", name)
	return s
}

// LookupROCm reads what a HIP process on AMD reads: ROCR_VISIBLE_DEVICES for
// ROCr, and for ROCclr HIP_VISIBLE_DEVICES, or CUDA_VISIBLE_DEVICES where
// HIP_VISIBLE_DEVICES is unset or reads as empty (rocdevice.cpp tests
// HIP_VISIBLE_DEVICES[0] != '\0'). Pass both to MapROCm.
func LookupROCm(getenv Getenv) (rocr, hip Spec) {
	rocr = Unset(ROCr, EnvROCR)
	if v, ok := getenv(EnvROCR); ok {
		rocr = ParseROCm(EnvROCR, v)
	}
	hip = Unset(ROCclr, EnvHIP)
	for _, name := range []string{EnvHIP, EnvCUDA} {
		if v, ok := getenv(name); ok {
			if s := ParseROCm(name, v); s.Set {
				return rocr, s
			}
		}
	}
	return rocr, hip
}

func parseROCr(value string) Spec {
	s := Spec{Runtime: ROCr, Var: EnvROCR, Value: value, Set: true}
	if value == "" {
		s.Reason = "the value is empty: no device"
		return s
	}
	// getline(stream, token, ',') yields no token after a trailing comma.
	tokens := strings.Split(strings.TrimSuffix(value, ","), ",")
	for i, t := range tokens {
		t = trimSpace(strings.ToUpper(t))
		switch {
		case t == "":
			s.throwAt = len(s.Selectors) + 1
			s.Reason = fmt.Sprintf("entry %d is empty: if ROCr reaches it, hsa_init fails and no device is seen", i+1)
			return s
		case t[0] == 'G':
			if len(t) < 5 || len(t) > 20 {
				return s.stopped(i+1, t, "is not 5 to 20 characters long, as a UUID must be")
			}
			s.Selectors = append(s.Selectors, Selector{Text: t, Kind: GPUUUID, UUID: t})
		default:
			v, ok := strtol(t)
			if !ok {
				return s.stopped(i+1, t, "is not a whole number")
			}
			if v < 0 {
				return s.stopped(i+1, t, "is negative")
			}
			s.Selectors = append(s.Selectors, Selector{Text: t, Kind: Index, Index: int(v)})
		}
	}
	return s
}

func parseROCclr(name, value string) Spec {
	s := Spec{Runtime: ROCclr, Var: name, Value: value, Set: true}
	if value == "" {
		s.Reason = "the value is empty, which ROCclr reads as \" \": no device"
		return s
	}
	value = removeQuotes(value)
	if value == "" {
		s.Set = false
		s.Reason = "a quoted empty value reads as unset"
		return s
	}
	tokens := strings.Split(value, ",")
	if strings.HasSuffix(value, ",") {
		tokens = tokens[:len(tokens)-1] // the do/while stops at the end
	}
	for i, t := range tokens {
		if strings.Contains(t, "GPU-") {
			s.Selectors = append(s.Selectors, Selector{Text: t, Kind: GPUUUID, UUID: t})
			continue
		}
		v, err := strconv.ParseInt(t, 10, 32)
		if err != nil || v < 0 || strconv.FormatInt(v, 10) != t {
			return s.stopped(i+1, t, "is not a plain decimal index")
		}
		s.Selectors = append(s.Selectors, Selector{Text: t, Kind: Index, Index: int(v)})
	}
	return s
}

// strtol reads t whole as C's strtol(t, &end, 0) with *end == '\0' required,
// then keeps the low 32 bits as ROCr's int32_t does. t is trimmed already.
func strtol(t string) (int32, bool) {
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	base := uint64(10)
	switch {
	case len(t) > 2 && (t[:2] == "0X" || t[:2] == "0x") && hexDigit(t[2]) >= 0:
		base, t = 16, t[2:]
	case len(t) > 1 && t[0] == '0':
		base, t = 8, t[1:]
	}
	if t == "" {
		return 0, false
	}
	var v uint64
	over := false
	for i := 0; i < len(t); i++ {
		d := hexDigit(t[i])
		if d < 0 || uint64(d) >= base {
			return 0, false
		}
		if v > (math.MaxInt64-uint64(d))/base {
			over = true
			continue
		}
		v = v*base + uint64(d)
	}
	l := int64(v)
	switch {
	case over && neg:
		l = math.MinInt64 // ERANGE: LONG_MIN
	case over:
		l = math.MaxInt64 // ERANGE: LONG_MAX
	case neg:
		l = -l
	}
	return int32(l), true // implementation-defined narrowing; GCC keeps the low bits
}

// hexDigit is the value of a hex digit, or -1.
func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// removeQuotes is flags.cpp's: after leading blanks, a value in double
// quotes with only blanks after the closing one is the text between them.
func removeQuotes(v string) string {
	p := strings.TrimLeft(v, " ")
	if !strings.HasPrefix(p, `"`) {
		return v
	}
	end := strings.LastIndexByte(p, '"')
	if end == 0 || strings.Trim(p[end+1:], " ") != "" {
		return v
	}
	return p[1:end]
}

// AMDUUID is the UUID ROCr reports for a KFD node's unique_id
// (amd_gpu_agent.cpp, HSA_AMD_AGENT_INFO_UUID): "GPU-" and 16 lower-case hex
// digits, or "GPU-XX" for a GPU without one (before gfx9).
func AMDUUID(uniqueID uint64) string {
	if uniqueID == 0 {
		return "GPU-XX"
	}
	return fmt.Sprintf("GPU-%016x", uniqueID)
}
