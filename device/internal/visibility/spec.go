package visibility

import "fmt"

// The variables this package reads.
const (
	// EnvCUDA is read by the CUDA driver, and by HIP where EnvHIP is unset.
	EnvCUDA = "CUDA_VISIBLE_DEVICES"
	// EnvHIP is read by HIP's runtime (ROCclr) on AMD.
	EnvHIP = "HIP_VISIBLE_DEVICES"
	// EnvROCR is read by ROCr, under every ROCm runtime.
	EnvROCR = "ROCR_VISIBLE_DEVICES"
	// EnvOpenCL is read by ROCclr for OpenCL, not for HIP.
	EnvOpenCL = "GPU_DEVICE_ORDINAL"
	// EnvOrder is CUDA_DEVICE_ORDER, which Map takes as its order argument.
	EnvOrder = "CUDA_DEVICE_ORDER"
)

// Runtime names the code that reads a variable, since CUDA_VISIBLE_DEVICES
// means one thing to CUDA and another to HIP.
type Runtime int

const (
	// CUDA is NVIDIA's driver (libcuda).
	CUDA Runtime = iota
	// ROCr is ROCm's HSA runtime, which filters GPUs for every ROCm runtime
	// above it.
	ROCr
	// ROCclr is the ROCm common language runtime under HIP and OpenCL, which
	// filters what ROCr left.
	ROCclr
)

// String returns the runtime's name.
func (r Runtime) String() string {
	switch r {
	case CUDA:
		return "cuda"
	case ROCr:
		return "rocr"
	case ROCclr:
		return "rocclr"
	}
	return fmt.Sprintf("Runtime(%d)", int(r))
}

// Kind is what a Selector names.
type Kind int

const (
	// Index is an ordinal into the runtime's own enumeration.
	Index Kind = iota
	// GPUUUID is a GPU's UUID or the start of one: "GPU-8932f937".
	GPUUUID
	// MIGUUID is a MIG device's own UUID, the R470 and later form:
	// "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f".
	MIGUUID
	// MIGInstance is the form before R470: the parent GPU's UUID and the GPU
	// and compute instance ids, "MIG-GPU-<uuid>/<gi>/<ci>".
	MIGInstance
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case Index:
		return "index"
	case GPUUUID:
		return "gpu-uuid"
	case MIGUUID:
		return "mig-uuid"
	case MIGInstance:
		return "mig-instance"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Selector is one entry of a visibility variable that stands.
type Selector struct {
	Text  string // the entry as the runtime compares it (ROCr upper-cases and trims)
	Kind  Kind   // what the entry names
	Index int    // Kind Index: the ordinal (saturated at math.MaxInt)
	UUID  string // the UUID or prefix; for MIGInstance the parent's "GPU-…"
	GI    int    // MIGInstance: the GPU instance id
	CI    int    // MIGInstance: the compute instance id
}

// Spec is one visibility variable as a runtime reads it.
//
// Set false means the variable is unset and filters nothing. Set with no
// Selectors means the runtime sees no device: the value is empty, its first
// entry is invalid, or (CUDA) an entry repeats. Selectors are the entries
// that stand, in order; resolving them against devices (Map) can end the list
// sooner, at an index out of range or a UUID that names no device or two.
type Spec struct {
	Runtime   Runtime    // the code that reads the variable
	Var       string     // the variable's name
	Value     string     // the value as read
	Set       bool       // the variable is set (and does not read as unset)
	Selectors []Selector // the entries that stand, in order
	// Reason says why the list is shorter than written ("" when every
	// entry stands): the entry that ended it, or the repeat that emptied it.
	Reason string

	throwAt int // ROCr: 1 + the position of an empty entry ROCr throws on, or 0
}

// All reports whether the Spec filters nothing.
func (s Spec) All() bool { return !s.Set }

// None reports whether the Spec lets no device through.
func (s Spec) None() bool { return s.Set && len(s.Selectors) == 0 }

// Unset is the Spec of a variable that is not set: every device.
func Unset(r Runtime, name string) Spec { return Spec{Runtime: r, Var: name} }

// Getenv is os.LookupEnv's shape, so tests can pass a map.
type Getenv func(name string) (string, bool)

// LookupCUDA reads CUDA_VISIBLE_DEVICES as CUDA does.
func LookupCUDA(getenv Getenv) Spec {
	v, ok := getenv(EnvCUDA)
	if !ok {
		return Unset(CUDA, EnvCUDA)
	}
	return ParseCUDA(v)
}

// stopped returns s ending at entry n (counted from 1) for why.
func (s Spec) stopped(n int, text, why string) Spec {
	s.Reason = fmt.Sprintf("entry %d %q %s: the list ends before it", n, text, why)
	return s
}

// emptied returns s with no entries, entry n repeating entry first.
func (s Spec) emptied(n, first int, text string) Spec {
	s.Selectors = nil
	s.Reason = fmt.Sprintf("entry %d %q repeats entry %d: CUDA then sees no device", n, text, first)
	return s
}
