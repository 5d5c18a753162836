package visibility

import (
	"math"
	"strconv"
	"strings"
)

// ParseCUDA reads a set CUDA_VISIBLE_DEVICES as the CUDA driver does (use
// LookupCUDA or Unset for an unset one). The rules, and where they come from
// (the driver is closed; NVIDIA's CUDA Programming Guide, "CUDA Environment
// Variables", states some, PyTorch's _parse_visible_devices in
// torch/cuda/__init__.py models the rest and was checked against driver
// 525.60.13, pytorch/pytorch#92315):
//
//   - The value is a comma-separated list (CUDA guide). An empty value shows
//     no device (PyTorch: an empty list; CUDA answers "no CUDA-capable
//     device").
//   - The first entry decides the list's form (PyTorch): a value starting
//     "GPU-" is a list of GPU UUIDs, one starting "MIG-" a list of MIG
//     devices, anything else a list of indices. In a UUID list the first
//     entry without the prefix ends the list ("GPU-123, 2" is one entry, the
//     " 2" ends it); in an index list a UUID is not a number and ends it.
//   - UUID entries are compared as written, with no trimming (PyTorch's
//     startswith): " GPU-…" after a comma ends a GPU list, and a value that
//     starts with a blank is read as indices. Unconfirmed against the driver.
//   - An index entry is read like strtoul (PyTorch's _strtoul): blanks around
//     it are ignored, one leading '+' or '-' is allowed, then decimal digits
//     up to the first non-digit; the rest is ignored ("1gpu2" is 1). No digit
//     at all ("one", "", "+") ends the list, and so does a negative number
//     ("0,2,-1,1" is 0,2: CUDA guide); "-0" is 0 (PyTorch's test "2, +3, -0,
//     5"). Leading zeros are decimal, "010" is 10 (PyTorch's int(); whether
//     the driver reads octal is unconfirmed). Numbers past 2⁶⁴-1 saturate, as
//     strtoul's do.
//   - An entry that repeats an earlier one, as written (UUIDs) or by value
//     (indices: "0,00"), makes the whole list empty: CUDA then sees no device
//     (PyTorch: "Repeated id results in empty set").
//   - A MIG entry is "MIG-<uuid>" (R470 and later) or
//     "MIG-GPU-<uuid>/<gi>/<ci>" (before R470), NVIDIA MIG User Guide, "CUDA
//     Device Enumeration".
//
// What an entry names (an index out of range, a UUID prefix that matches no
// GPU or two) is settled against devices by Map, which also ends the list
// there.
func ParseCUDA(value string) Spec {
	s := Spec{Runtime: CUDA, Var: EnvCUDA, Value: value, Set: true}
	if value == "" {
		s.Reason = "the value is empty: no device"
		return s
	}
	entries := strings.Split(value, ",")
	for _, prefix := range []string{"GPU-", "MIG-"} {
		if strings.HasPrefix(value, prefix) {
			return parseCUDAUUIDs(s, entries, prefix)
		}
	}
	seen := map[string]int{}
	for i, e := range entries {
		v, neg, ok := strtoul(e)
		if !ok {
			return s.stopped(i+1, e, "is not a number")
		}
		if neg && v != 0 {
			return s.stopped(i+1, e, "is negative")
		}
		key := "i" + strconv.FormatUint(v, 10)
		if first, dup := seen[key]; dup {
			return s.emptied(i+1, first, e)
		}
		seen[key] = i + 1
		index := math.MaxInt
		if v < math.MaxInt {
			index = int(v)
		}
		s.Selectors = append(s.Selectors, Selector{Text: e, Kind: Index, Index: index})
	}
	return s
}

// parseCUDAUUIDs reads a list whose first entry starts with prefix, as
// PyTorch's parse_list_with_prefix does.
func parseCUDAUUIDs(s Spec, entries []string, prefix string) Spec {
	seen := map[string]int{}
	for i, e := range entries {
		if first, dup := seen[e]; dup {
			return s.emptied(i+1, first, e)
		}
		if !strings.HasPrefix(e, prefix) {
			return s.stopped(i+1, e, "does not start with "+prefix+" as the first entry does")
		}
		seen[e] = i + 1
		sel := Selector{Text: e, Kind: GPUUUID, UUID: e}
		if prefix == "MIG-" {
			sel.Kind = MIGUUID
			if parent, gi, ci, ok := migInstance(e); ok {
				sel.Kind, sel.UUID, sel.GI, sel.CI = MIGInstance, parent, gi, ci
			}
		}
		s.Selectors = append(s.Selectors, sel)
	}
	return s
}

// migInstance splits the pre-R470 form MIG-GPU-<uuid>/<gi>/<ci>.
func migInstance(e string) (parent string, gi, ci int, ok bool) {
	rest, found := strings.CutPrefix(e, "MIG-")
	if !found || !strings.HasPrefix(rest, "GPU-") {
		return "", 0, 0, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[0] == "GPU-" {
		return "", 0, 0, false
	}
	gi, err1 := strconv.Atoi(parts[1])
	ci, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || gi < 0 || ci < 0 {
		return "", 0, 0, false
	}
	return parts[0], gi, ci, true
}

// isSpace is C's isspace in the "C" locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// trimSpace trims isSpace bytes from both ends.
func trimSpace(s string) string {
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// strtoul reads e as PyTorch's _strtoul reads CUDA's entries: blanks
// trimmed, an optional sign, decimal digits to the first non-digit. ok is
// false without a digit; v saturates at 2⁶⁴-1 as strtoul's ULONG_MAX does.
func strtoul(e string) (v uint64, neg, ok bool) {
	e = trimSpace(e)
	if e != "" && (e[0] == '+' || e[0] == '-') {
		neg = e[0] == '-'
		e = e[1:]
	}
	for i := 0; i < len(e) && e[i] >= '0' && e[i] <= '9'; i++ {
		ok = true
		d := uint64(e[i] - '0')
		if v > (math.MaxUint64-d)/10 {
			v = math.MaxUint64
			continue
		}
		v = v*10 + d
	}
	return v, neg, ok
}
