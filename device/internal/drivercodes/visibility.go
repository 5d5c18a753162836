package drivercodes

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/gpuinit/gpuinit/device"
)

// The variables that choose which GPUs a process sees, per vendor.
var (
	CUDAVisibility = []string{"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"}
	HIPVisibility  = []string{"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "CUDA_VISIBLE_DEVICES", "HSA_OVERRIDE_GFX_VERSION"}
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
// `NAME="value"`, or returns nil.
func Hiding(vars []string) []string {
	var hiding []string
	for _, name := range vars {
		if name == "CUDA_DEVICE_ORDER" || name == "HSA_OVERRIDE_GFX_VERSION" {
			continue
		}
		if v, ok := os.LookupEnv(name); ok && hidesEverything(v) {
			hiding = append(hiding, fmt.Sprintf("%s=%q", name, v))
		}
	}
	return hiding
}

// WithVisibilityHint prefixes the hint of a no-device error with the
// variables that hide every device, since they are the likeliest cause.
func WithVisibilityHint(err error, vars []string) error {
	var de *device.DriverError
	if !errors.Is(err, device.ErrNoDevice) || !errors.As(err, &de) {
		return err
	}
	if hiding := Hiding(vars); len(hiding) > 0 {
		de.Hint = strings.Join(hiding, " and ") + " hides every device: unset it or name the GPUs to use; " + de.Hint
	}
	return err
}
