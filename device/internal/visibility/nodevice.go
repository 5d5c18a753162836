package visibility

import (
	"fmt"
	"strings"
)

// NoDevice reports whether the runtime that reads s sees no device whatever
// the host's devices are, given only how many GPUs the host shows (gpus; 0
// when that is not known), and says why. It is how a "no device" answer is
// told from one a wait may change: what NoDevice reports, no wait and no
// restart changes while the variable stays.
//
// It decides from what is knowable without the runtime:
//
//   - The value alone: s.None(), a list the runtime reads no entry of (empty,
//     a first entry that is no index or UUID, a negative first index, CUDA's
//     repeated entry), and ROCr's empty first entry, on which hsa_init fails.
//   - The first entry's form: a UUID entry that no UUID of the vendor's form
//     can match (CUDA: "GPU-" or "MIG-" then the 8-4-4-4-12 hex digits NVML
//     prints, or the pre-R470 "MIG-GPU-<uuid>/<gi>/<ci>"; ROCr: "GPU-" and up
//     to 16 hex digits, case aside; ROCclr: "GPU-" and up to 16 lower-case hex
//     digits, or "GPU-XX"). The list ends at its first entry that names
//     nothing, so nothing is seen.
//   - The count of GPUs: CUDA's bare "GPU-", a prefix of every GPU's UUID, is
//     ambiguous, so names nothing, on a host of two GPUs or more.
//
// What only the devices themselves settle is not decided, and NoDevice
// reports false: an index past the last device (CUDA numbers MIG devices too,
// so the GPU count does not bound it), a well-formed UUID no device has, or
// two entries that name one device. Where the CUDA driver's rule is not
// confirmed (whether it compares UUIDs case aside) the reading that sees a
// device is taken, so that NoDevice is never true for a list that might work.
func (s Spec) NoDevice(gpus int) (none bool, why string) {
	switch {
	case !s.Set:
		return false, ""
	case s.None():
		return true, s.Reason
	case s.throwAt == 1:
		return true, s.Reason
	}
	first := s.Selectors[0]
	switch first.Kind {
	case Index:
		return false, ""
	case MIGInstance:
		if !nvidiaUUIDPrefix(strings.TrimPrefix(first.UUID, "GPU-")) {
			return true, fmt.Sprintf("entry 1 %q names a GPU by a UUID no NVIDIA GPU can have", first.Text)
		}
		return false, ""
	}
	if !s.uuidCanMatch(first.UUID) {
		return true, fmt.Sprintf("entry 1 %q can be the start of no device's UUID: the list ends before it", first.Text)
	}
	if s.Runtime == CUDA && first.Kind == GPUUUID && first.UUID == "GPU-" && gpus >= 2 {
		return true, fmt.Sprintf("entry 1 %q starts the UUID of every one of the host's %d GPUs: CUDA refuses an ambiguous prefix", first.Text, gpus)
	}
	return false, ""
}

// uuidCanMatch reports whether some device of s's vendor could have a UUID
// that s's runtime matches with the UUID entry u.
func (s Spec) uuidCanMatch(u string) bool {
	switch s.Runtime {
	case CUDA:
		if rest, ok := strings.CutPrefix(u, "GPU-"); ok {
			return nvidiaUUIDPrefix(rest)
		}
		rest, _ := strings.CutPrefix(u, "MIG-")
		return nvidiaUUIDPrefix(rest) || preR470MIGPrefix(rest)
	case ROCr:
		rest, ok := strings.CutPrefix(u, "GPU-") // ROCr upper-cased it
		return ok && len(rest) <= 16 && isHex(rest, true)
	case ROCclr:
		rest, ok := strings.CutPrefix(u, "GPU-") // "GPU-" cannot occur later in a UUID
		return ok && (len(rest) <= 16 && isHex(rest, false) || rest == "X" || rest == "XX")
	}
	return true
}

// nvidiaShape is the form of an NVIDIA UUID after its "GPU-" or "MIG-".
const nvidiaShape = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"

// nvidiaUUIDPrefix reports whether rest can start the part of an NVIDIA UUID
// after its "GPU-" or "MIG-": hex digits, in either case, and dashes where
// nvidiaShape has them.
func nvidiaUUIDPrefix(rest string) bool {
	if len(rest) > len(nvidiaShape) {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if nvidiaShape[i] == '-' {
			if rest[i] != '-' {
				return false
			}
		} else if hexDigit(rest[i]) < 0 {
			return false
		}
	}
	return true
}

// preR470MIGPrefix reports whether rest can start the part after "MIG-" of a
// MIG device's name before R470: "GPU-<uuid>/<gi>/<ci>".
func preR470MIGPrefix(rest string) bool {
	if len(rest) < len("GPU-") {
		return strings.HasPrefix("GPU-", rest)
	}
	rest, ok := strings.CutPrefix(rest, "GPU-")
	if !ok {
		return false
	}
	uuid, ids, slash := strings.Cut(rest, "/")
	if !nvidiaUUIDPrefix(uuid) {
		return false
	}
	if !slash {
		return true
	}
	if len(uuid) != len(nvidiaShape) {
		return false
	}
	gi, ci, _ := strings.Cut(ids, "/")
	return isDecimal(gi) && isDecimal(ci)
}

// isHex reports whether s is hex digits only; upper or lower case only,
// where only one of them can match.
func isHex(s string, upper bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
		case upper && c >= 'A' && c <= 'F':
		case !upper && c >= 'a' && c <= 'f':
		default:
			return false
		}
	}
	return true
}

func isDecimal(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
