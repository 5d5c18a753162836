package hip

import "github.com/gpuinit/gpuinit/device"

const noDeviceHint = "check HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES, run rocminfo; in a container, pass --device=/dev/kfd --device=/dev/dri --group-add video"

// driverCodes are the hipError_t values users meet when bringing up a GPU.
var driverCodes = &device.CodeTable{Backend: "hip", Unnamed: "hipError_t", Codes: map[int]device.Code{
	3:   {Name: "hipErrorNotInitialized", Hint: "hipInit has not succeeded in this process"},
	35:  {Name: "hipErrorInsufficientDriver", Sentinel: device.ErrDriverMismatch, Hint: "the amdgpu kernel driver is older than this ROCm needs: upgrade it, or use a ROCm the host driver supports"},
	100: {Name: "hipErrorNoDevice", Sentinel: device.ErrNoDevice, Hint: noDeviceHint},
	101: {Name: "hipErrorInvalidDevice", Sentinel: device.ErrInvalidDevice, Hint: "the ordinal is outside 0..count-1; HIP_VISIBLE_DEVICES renumbers devices"},
	999: {Name: "hipErrorUnknown", Hint: "check dmesg for amdgpu errors; a GPU reset or reboot may be needed"},
}}

// driverError builds the error for op's raw code. From hipInit, 101 means no
// GPU: ROCm before 6.2 reports a missing /dev/kfd that way.
func driverError(op string, code int, name, message string) *device.DriverError {
	e := driverCodes.Error(op, code, name, message)
	if op == "hipInit" && code == 101 {
		e.Sentinel = device.ErrNoDevice
		e.Hint = noDeviceHint + " (ROCm before 6.2 reports a missing /dev/kfd as 101)"
	}
	return e
}

const launchHint = "the kernel could not run: is there a GPU (rocminfo)? " + noDeviceHint

// hiprandCodes are the hiprandStatus_t values.
var hiprandCodes = &device.CodeTable{Backend: "hip", Unnamed: "hiprandStatus_t", Codes: map[int]device.Code{
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
