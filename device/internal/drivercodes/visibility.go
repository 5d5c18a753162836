package drivercodes

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/kfd"
	"github.com/gpuinit/gpuinit/device/internal/nvmodule"
)

// The variables that can hide every GPU from a process, per vendor. Those
// that only order or retarget devices (CUDA_DEVICE_ORDER,
// HSA_OVERRIDE_GFX_VERSION) hide none, so they are not here;
// the Runtime's Stats().Visibility reports them all.
var (
	CUDAHiding = []string{"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"}
	HIPHiding  = []string{"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "CUDA_VISIBLE_DEVICES"}
)

// hidesEverything reports whether a visibility setting hides every device:
// set but empty, -1, void, none or NoDevFiles (the NVIDIA container
// toolkit's spellings).
func hidesEverything(value string) bool {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "", "-1", "void", "none", "nodevfiles":
		return true
	}
	return false
}

// Hiding names the variables among vars that hide every device, as
// `NAME="value"`, or returns nil. HIP reads CUDA_VISIBLE_DEVICES only where
// HIP_VISIBLE_DEVICES is unset, so a list with both counts the first alone.
func Hiding(vars []string) []string {
	_, hipSet := os.LookupEnv("HIP_VISIBLE_DEVICES")
	hipFamily := slices.Contains(vars, "HIP_VISIBLE_DEVICES")
	var hiding []string
	for _, name := range vars {
		if name == "CUDA_VISIBLE_DEVICES" && hipFamily && hipSet {
			continue
		}
		if v, ok := os.LookupEnv(name); ok && hidesEverything(v) {
			hiding = append(hiding, fmt.Sprintf("%s=%q", name, v))
		}
	}
	return hiding
}

// HidingFor is Hiding over the variables of a backend's visibility family.
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
// variables that hide every device, since they are the likeliest cause.
func WithVisibilityHint(err error, vars []string) error {
	return prefixNoDeviceHint(err, func() string {
		if hiding := Hiding(vars); len(hiding) > 0 {
			return strings.Join(hiding, " and ") + " hides every device: unset it or name the GPUs to use"
		}
		return ""
	})
}

// WithNVModuleHint prefixes the hint of a CUDA no-device error with what the
// NVIDIA kernel side lacks, if anything (the module not loaded: no
// /proc/driver/nvidia/version; no /dev/nvidiactl or /dev/nvidia-uvm): libcuda
// answers 100 for that as for a hidden GPU.
func WithNVModuleHint(err error) error {
	return prefixNoDeviceHint(err, func() string { return nvmodule.Read().Problem() })
}

// WithKFDHint prefixes the hint of a HIP no-device error with what is wrong
// with /dev/kfd, if anything: the commonest causes.
func WithKFDHint(err error) error { return prefixNoDeviceHint(err, kfd.Problem) }

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
