package drivercodes

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/host"
	"github.com/gpuinit/gpuinit/device/internal/visibility"
)

// Family is a vendor's visibility variables, read as its runtime reads
// them. Variables that only order or retarget devices (CUDA_DEVICE_ORDER,
// HSA_OVERRIDE_GFX_VERSION) hide none, so they are not in one; the Runtime's
// Stats().Visibility reports them all.
type Family struct {
	Visibility driver.Visibility
	Vars       []string // the variables the family's runtime reads to choose devices
}

// The families. HIP reads CUDA_VISIBLE_DEVICES where HIP_VISIBLE_DEVICES is
// unset. GPU_DEVICE_ORDINAL is not in HIP's: ROCclr reads it for OpenCL only
// (see visibility.ParseROCm), so it hides nothing from HIP.
var (
	CUDAHiding = Family{driver.VisibilityCUDA, []string{visibility.EnvCUDA, envNVIDIA}}
	HIPHiding  = Family{driver.VisibilityROCm, []string{visibility.EnvROCR, visibility.EnvHIP, visibility.EnvCUDA}}
)

// envNVIDIA is the NVIDIA container toolkit's variable. The toolkit reads it
// when it creates the container, to choose the device nodes it passes in; no
// driver reads it. Inside, its value says what was passed: "", void or none,
// no GPU.
const envNVIDIA = "NVIDIA_VISIBLE_DEVICES"

// hider is one variable that hides every device, and why.
type hider struct{ name, value, why string }

func (h hider) String() string { return fmt.Sprintf("%s=%q", h.name, h.value) }

// hiders are the variables of f that, as f's runtime reads them, leave it no
// device whatever the host's devices (visibility.Spec.NoDevice), given the
// number of GPU device nodes the host shows. A list that selects nothing only
// given the devices (a well-formed UUID no device has, an index past the
// last) is left to the driver's answer: it hides nothing here.
func hiders(f Family) []hider {
	var out []hider
	add := func(s visibility.Spec, gpus int) {
		if none, why := s.NoDevice(gpus); none {
			out = append(out, hider{s.Var, s.Value, why})
		}
	}
	switch f.Visibility {
	case driver.VisibilityCUDA:
		add(visibility.LookupCUDA(os.LookupEnv), len(host.ReadNVModule().GPUs))
		if v, ok := os.LookupEnv(envNVIDIA); ok && toolkitPassedNone(v) {
			out = append(out, hider{envNVIDIA, v, "the NVIDIA container toolkit passed no GPU in"})
		}
	case driver.VisibilityROCm:
		rocr, hip := visibility.LookupROCm(os.LookupEnv)
		add(rocr, 0)
		add(hip, 0)
	}
	return out
}

// toolkitPassedNone reports whether NVIDIA_VISIBLE_DEVICES says the toolkit
// passed no GPU: set but empty, void or none (the toolkit's spellings), or
// -1 and NoDevFiles (the spellings of schedulers that set it beside
// CUDA_VISIBLE_DEVICES).
func toolkitPassedNone(value string) bool {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "", "-1", "void", "none", "nodevfiles":
		return true
	}
	return false
}

// Hiding names the variables of f that hide every device, as `NAME="value"`,
// or returns nil. A variable its runtime does not read (CUDA_VISIBLE_DEVICES
// under HIP while HIP_VISIBLE_DEVICES is set) is not named.
func Hiding(f Family) []string {
	var names []string
	for _, h := range hiders(f) {
		names = append(names, h.String())
	}
	return names
}

// HidingFor is Hiding over the family of a backend's visibility.
func HidingFor(v driver.Visibility) []string {
	switch v {
	case driver.VisibilityCUDA:
		return Hiding(CUDAHiding)
	case driver.VisibilityROCm:
		return Hiding(HIPHiding)
	}
	return nil
}

// WithVisibilityHint prefixes the hint of a no-device error with the
// variables that hide every device, and why, since they are the likeliest
// cause.
func WithVisibilityHint(err error, f Family) error {
	return prefixNoDeviceHint(err, func() string {
		var says []string
		for _, h := range hiders(f) {
			says = append(says, fmt.Sprintf("%s hides every device (%s)", h, h.why))
		}
		if len(says) > 0 {
			return strings.Join(says, " and ") + ": unset it or name the GPUs to use"
		}
		return ""
	})
}

// WithNVModuleHint prefixes the hint of a CUDA no-device error with what the
// NVIDIA kernel side lacks, if anything (the module not loaded: no
// /proc/driver/nvidia/version; no /dev/nvidiactl or /dev/nvidia-uvm): libcuda
// answers 100 for that as for a hidden GPU.
func WithNVModuleHint(err error) error {
	return prefixNoDeviceHint(err, func() string { return host.ReadNVModule().Problem() })
}

// WithKFDHint prefixes the hint of a HIP no-device error with what is wrong
// with /dev/kfd, if anything: the commonest causes.
func WithKFDHint(err error) error { return prefixNoDeviceHint(err, host.KFDProblem) }

// prefixNoDeviceHint puts what prefix says, if anything, before the hint of
// err's *driver.DriverError, if err means no device; prefix is not called
// otherwise (it reads the environment, or opens /dev/kfd).
func prefixNoDeviceHint(err error, prefix func() string) error {
	var de *driver.DriverError
	if !errors.Is(err, driver.ErrNoDevice) || !errors.As(err, &de) {
		return err
	}
	if p := prefix(); p != "" {
		de.Hint = p + "; " + de.Hint
	}
	return err
}
