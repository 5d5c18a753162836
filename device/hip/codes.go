package hip

import "github.com/gpuinit/gpuinit/device"

type codeInfo struct {
	name     string
	sentinel error
	hint     string
}

const noDeviceHint = "check HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES, run rocminfo; in a container, pass --device=/dev/kfd --device=/dev/dri --group-add video"

// codes maps the hipError_t values users meet when bringing up a GPU.
var codes = map[int]codeInfo{
	3:   {"hipErrorNotInitialized", nil, "hipInit has not succeeded in this process"},
	35:  {"hipErrorInsufficientDriver", device.ErrDriverMismatch, "the amdgpu kernel driver is older than this ROCm needs: upgrade it, or use a ROCm the host driver supports"},
	100: {"hipErrorNoDevice", device.ErrNoDevice, noDeviceHint},
	101: {"hipErrorInvalidDevice", device.ErrInvalidDevice, "the ordinal is outside 0..count-1; HIP_VISIBLE_DEVICES renumbers devices"},
	999: {"hipErrorUnknown", nil, "check dmesg for amdgpu errors; a GPU reset or reboot may be needed"},
}

// driverError builds the error for op's raw code. hipInit's 101 means no GPU.
func driverError(op string, code int, name, message string) *device.DriverError {
	info := codes[code]
	if op == "hipInit" && code == 101 {
		info = codeInfo{"hipErrorInvalidDevice", device.ErrNoDevice, noDeviceHint + " (ROCm before 6.2 reports a missing /dev/kfd as 101)"}
	}
	if name == "" {
		name = info.name
	}
	if name == "" {
		name = "hipError_t"
	}
	return &device.DriverError{Backend: "hip", Op: op, Code: code, Name: name, Message: message,
		Hint: info.hint, Sentinel: info.sentinel}
}

// hiprandStatus names the hiprandStatus_t values.
var hiprandStatus = map[int]string{
	100: "HIPRAND_STATUS_VERSION_MISMATCH", 101: "HIPRAND_STATUS_NOT_INITIALIZED",
	102: "HIPRAND_STATUS_ALLOCATION_FAILED", 103: "HIPRAND_STATUS_TYPE_ERROR",
	104: "HIPRAND_STATUS_OUT_OF_RANGE", 105: "HIPRAND_STATUS_LENGTH_NOT_MULTIPLE",
	106: "HIPRAND_STATUS_DOUBLE_PRECISION_REQUIRED", 201: "HIPRAND_STATUS_LAUNCH_FAILURE",
	202: "HIPRAND_STATUS_PREEXISTING_FAILURE", 203: "HIPRAND_STATUS_INITIALIZATION_FAILED",
	204: "HIPRAND_STATUS_ARCH_MISMATCH", 999: "HIPRAND_STATUS_INTERNAL_ERROR",
	1000: "HIPRAND_STATUS_NOT_IMPLEMENTED",
}

func hiprandError(op string, status int) *device.DriverError {
	name := hiprandStatus[status]
	if name == "" {
		name = "hiprandStatus_t"
	}
	e := &device.DriverError{Backend: "hip", Op: op, Code: status, Name: name}
	if status == 201 || status == 203 {
		e.Hint = "the kernel could not run: is there a GPU (rocminfo)? " + noDeviceHint
	}
	return e
}
