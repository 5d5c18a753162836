package drivercodes

import (
	"strings"

	"github.com/gpuinit/gpuinit/device/driver"
)

// Hints shared by several codes and by the loaders.
const (
	HIPNoDeviceHint = "check HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES, run rocminfo; in a container, pass --device=/dev/kfd --device=/dev/dri --group-add video --group-add render"
	stickyHIPHint   = "the device is unusable for the rest of this process (a sticky error): restart the process; if it recurs, check dmesg for amdgpu errors"
)

// HIP are the hipError_t values users meet when bringing up or running a GPU.
var HIP = &driver.CodeTable{Backend: "hip", Unnamed: "hipError_t", Codes: map[int]driver.Code{
	3:   {Name: "hipErrorNotInitialized", Hint: "hipInit has not succeeded in this process"},
	35:  {Name: "hipErrorInsufficientDriver", Sentinel: driver.ErrDriverTooOld, Hint: "the amdgpu kernel driver is older than this ROCm needs: upgrade it, or use a ROCm the host driver supports"},
	100: {Name: "hipErrorNoDevice", Sentinel: driver.ErrNoDevice, Hint: HIPNoDeviceHint},
	101: {Name: "hipErrorInvalidDevice", Sentinel: driver.ErrInvalidDevice, Hint: "the ordinal is outside 0..count-1; HIP_VISIBLE_DEVICES renumbers devices"},
	209: {Name: "hipErrorNoBinaryForGpu", Sentinel: driver.ErrNotSupported, Hint: "the ROCm libraries have no code for this GPU's gfx target: use a ROCm that supports it, or set HSA_OVERRIDE_GFX_VERSION to a supported target of the same family (10.3.0 for RDNA2, 11.0.0 for RDNA3)"},
	214: {Name: "hipErrorECCNotCorrectable", Sticky: true, Hint: "an uncorrectable ECC error: " + stickyHIPHint},
	700: {Name: "hipErrorIllegalAddress", Sticky: true, Hint: "a kernel touched an illegal address: " + stickyHIPHint},
	702: {Name: "hipErrorLaunchTimeOut", Sticky: true, Hint: stickyHIPHint},
	710: {Name: "hipErrorAssert", Sticky: true, Hint: "a device-side assert fired: " + stickyHIPHint},
	719: {Name: "hipErrorLaunchFailure", Sticky: true, Hint: "a kernel failed: " + stickyHIPHint},
	999: {Name: "hipErrorUnknown", Hint: "check dmesg for amdgpu errors; a GPU reset or reboot may be needed"},
}}

// HIPError builds the error for op's raw hipError_t. From hipInit, 101 means no
// GPU: ROCm before 6.2 reports a missing /dev/kfd that way.
func HIPError(op string, code int, name, message string) *driver.DriverError {
	e := HIP.Error(op, code, name, message)
	if op == "hipInit" && code == 101 {
		e.Sentinel = driver.ErrNoDevice
		e.Hint = HIPNoDeviceHint + " (before ROCm 6.2, 101 means no /dev/kfd)"
	}
	return e
}

const launchHint = "the kernel could not run: is there a GPU (rocminfo)? If there is, the ROCm libraries may have no code for its gfx target: " +
	"use a ROCm that supports it, or set HSA_OVERRIDE_GFX_VERSION to a supported target of the same family (10.3.0 for RDNA2, 11.0.0 for RDNA3)"

// HIPRAND are the hiprandStatus_t values.
var HIPRAND = &driver.CodeTable{Backend: "hip", Unnamed: "hiprandStatus_t", Codes: map[int]driver.Code{
	100: {Name: "HIPRAND_STATUS_VERSION_MISMATCH"}, 101: {Name: "HIPRAND_STATUS_NOT_INITIALIZED"},
	102: {Name: "HIPRAND_STATUS_ALLOCATION_FAILED"}, 103: {Name: "HIPRAND_STATUS_TYPE_ERROR"},
	104: {Name: "HIPRAND_STATUS_OUT_OF_RANGE"}, 105: {Name: "HIPRAND_STATUS_LENGTH_NOT_MULTIPLE"},
	106: {Name: "HIPRAND_STATUS_DOUBLE_PRECISION_REQUIRED"},
	201: {Name: "HIPRAND_STATUS_LAUNCH_FAILURE", Hint: launchHint},
	202: {Name: "HIPRAND_STATUS_PREEXISTING_FAILURE"},
	203: {Name: "HIPRAND_STATUS_INITIALIZATION_FAILED", Hint: launchHint},
	204: {Name: "HIPRAND_STATUS_ARCH_MISMATCH"}, 999: {Name: "HIPRAND_STATUS_INTERNAL_ERROR"},
	1000: {Name: "HIPRAND_STATUS_NOT_IMPLEMENTED"},
}}

// HIPNotFoundHint is for a libamdhip64 found nowhere (passing the devices
// into a container fixes "no device", not a missing library): where ROCM_PATH is set
// (rocmPath), it says the runtime is not in it rather than to set it.
func HIPNotFoundHint(rocmPath string) string {
	where := "or set ROCM_PATH to the ROCm install"
	if strings.TrimSpace(rocmPath) != "" {
		where = "ROCM_PATH=" + rocmPath + " has no lib/libamdhip64.so*"
	}
	return "install ROCm's HIP runtime (hip-runtime-amd; Debian: libamdhip64-5), " + where + "; or set GPUINIT_HIP_LIBRARY to its file"
}
