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

// EnvDevRoot moves /dev, for tests and for containers that mount device nodes
// elsewhere.
const EnvDevRoot = "GPUINIT_DEV_ROOT"

// kfdProblem says what is wrong with /dev/kfd, the device node every ROCm
// process opens, or "" when it can be opened.
func kfdProblem() string {
	root := strings.TrimSpace(os.Getenv(EnvDevRoot))
	if root == "" {
		root = "/dev"
	}
	return kfdProblemAt(root+"/kfd", func(path string) error {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err == nil {
			f.Close()
		}
		return err
	})
}

// kfdProblemAt is kfdProblem for the device node at path, opened with open.
func kfdProblemAt(path string, open func(string) error) string {
	err := open(path)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, os.ErrNotExist):
		return "there is no " + path + ": the amdgpu kernel driver is not loaded (modprobe amdgpu; check dmesg), or the container was started without --device=/dev/kfd --device=/dev/dri"
	case errors.Is(err, os.ErrPermission):
		return path + " exists but this user cannot open it: add the user to the render and video groups (in a container, --group-add render --group-add video)"
	}
	return "opening " + path + ": " + err.Error()
}

// WithKFDHint prefixes the hint of a HIP no-device error with what is wrong
// with /dev/kfd, if anything: the commonest causes.
func WithKFDHint(err error) error {
	var de *device.DriverError
	if !errors.Is(err, device.ErrNoDevice) || !errors.As(err, &de) {
		return err
	}
	if p := kfdProblem(); p != "" {
		de.Hint = p + "; " + de.Hint
	}
	return err
}
