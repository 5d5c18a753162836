package cuda

import "github.com/gpuinit/gpuinit/device"

// codeInfo is what gpuinit knows of a CUresult beyond the driver's own strings.
type codeInfo struct {
	name     string // used when cuGetErrorName cannot answer
	sentinel error
	hint     string
}

// codes maps the CUresult values users meet when bringing up a GPU.
var codes = map[int]codeInfo{
	3:   {"CUDA_ERROR_NOT_INITIALIZED", nil, "cuInit has not succeeded in this process"},
	34:  {"CUDA_ERROR_STUB_LIBRARY", device.ErrDriverNotFound, "the process loaded the link stub libcuda.so instead of the driver: install the NVIDIA driver or fix LD_LIBRARY_PATH"},
	35:  {"CUDA_ERROR_INSUFFICIENT_DRIVER", device.ErrDriverMismatch, "the NVIDIA driver is older than this CUDA version needs: upgrade the driver (nvidia-smi shows its version)"},
	100: {"CUDA_ERROR_NO_DEVICE", device.ErrNoDevice, "check CUDA_VISIBLE_DEVICES (empty or -1 hides every GPU) and run nvidia-smi; in a container, run with --gpus all"},
	101: {"CUDA_ERROR_INVALID_DEVICE", device.ErrInvalidDevice, "the ordinal is outside 0..count-1; CUDA_VISIBLE_DEVICES renumbers devices"},
	800: {"CUDA_ERROR_NOT_PERMITTED", nil, "the operation is not permitted: check the permissions of /dev/nvidia* and the container's device cgroup"},
	803: {"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", device.ErrDriverMismatch, "the user-space driver (libcuda) and the kernel module differ: reboot after a driver upgrade, or match the container's libcuda to the host driver"},
	804: {"CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", device.ErrDriverMismatch, "forward compatibility is not supported on this GPU: use a CUDA version the host driver supports natively"},
	999: {"CUDA_ERROR_UNKNOWN", nil, "often after suspend/resume: reload nvidia_uvm (rmmod nvidia_uvm && modprobe nvidia_uvm) or reboot"},
}

// driverError builds the error for op's raw code; name and message are the
// driver's own strings where it gave them.
func driverError(op string, code int, name, message string) *device.DriverError {
	info := codes[code]
	if name == "" {
		name = info.name
	}
	if name == "" {
		name = "CUresult"
	}
	return &device.DriverError{Backend: "cuda", Op: op, Code: code, Name: name, Message: message,
		Hint: info.hint, Sentinel: info.sentinel}
}

// curandStatus names the curandStatus_t values.
var curandStatus = map[int]string{
	100: "CURAND_STATUS_VERSION_MISMATCH", 101: "CURAND_STATUS_NOT_INITIALIZED",
	102: "CURAND_STATUS_ALLOCATION_FAILED", 103: "CURAND_STATUS_TYPE_ERROR",
	104: "CURAND_STATUS_OUT_OF_RANGE", 105: "CURAND_STATUS_LENGTH_NOT_MULTIPLE",
	106: "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED", 201: "CURAND_STATUS_LAUNCH_FAILURE",
	202: "CURAND_STATUS_PREEXISTING_FAILURE", 203: "CURAND_STATUS_INITIALIZATION_FAILED",
	204: "CURAND_STATUS_ARCH_MISMATCH", 999: "CURAND_STATUS_INTERNAL_ERROR",
}

func curandError(op string, status int) *device.DriverError {
	name := curandStatus[status]
	if name == "" {
		name = "curandStatus"
	}
	e := &device.DriverError{Backend: "cuda", Op: op, Code: status, Name: name}
	if status == 203 {
		e.Sentinel = device.ErrNoDevice
		e.Hint = "cuRAND could not initialize CUDA: is there a GPU (nvidia-smi)?"
	}
	return e
}
