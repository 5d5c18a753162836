package cuda

import "github.com/gpuinit/gpuinit/device"

// driverCodes are the CUresult values users meet when bringing up a GPU.
var driverCodes = &device.CodeTable{Backend: "cuda", Unnamed: "CUresult", Codes: map[int]device.Code{
	3:   {Name: "CUDA_ERROR_NOT_INITIALIZED", Hint: "cuInit has not succeeded in this process"},
	34:  {Name: "CUDA_ERROR_STUB_LIBRARY", Sentinel: device.ErrDriverNotFound, Hint: "the process loaded the link stub libcuda.so instead of the driver: install the NVIDIA driver or fix LD_LIBRARY_PATH"},
	35:  {Name: "CUDA_ERROR_INSUFFICIENT_DRIVER", Sentinel: device.ErrDriverMismatch, Hint: "the NVIDIA driver is older than this CUDA version needs: upgrade the driver (nvidia-smi shows its version)"},
	100: {Name: "CUDA_ERROR_NO_DEVICE", Sentinel: device.ErrNoDevice, Hint: "check CUDA_VISIBLE_DEVICES (empty or -1 hides every GPU) and run nvidia-smi; in a container, run with --gpus all"},
	101: {Name: "CUDA_ERROR_INVALID_DEVICE", Sentinel: device.ErrInvalidDevice, Hint: "the ordinal is outside 0..count-1; CUDA_VISIBLE_DEVICES renumbers devices"},
	800: {Name: "CUDA_ERROR_NOT_PERMITTED", Hint: "the operation is not permitted: check the permissions of /dev/nvidia* and the container's device cgroup"},
	803: {Name: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", Sentinel: device.ErrDriverMismatch, Hint: "the user-space driver (libcuda) and the kernel module differ: reboot after a driver upgrade, or match the container's libcuda to the host driver"},
	804: {Name: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", Sentinel: device.ErrDriverMismatch, Hint: "forward compatibility is not supported on this GPU: use a CUDA version the host driver supports natively"},
	999: {Name: "CUDA_ERROR_UNKNOWN", Hint: "often after suspend/resume: reload nvidia_uvm (rmmod nvidia_uvm && modprobe nvidia_uvm) or reboot"},
}}

// curandCodes are the curandStatus_t values.
var curandCodes = &device.CodeTable{Backend: "cuda", Unnamed: "curandStatus", Codes: map[int]device.Code{
	100: {Name: "CURAND_STATUS_VERSION_MISMATCH"}, 101: {Name: "CURAND_STATUS_NOT_INITIALIZED"},
	102: {Name: "CURAND_STATUS_ALLOCATION_FAILED"}, 103: {Name: "CURAND_STATUS_TYPE_ERROR"},
	104: {Name: "CURAND_STATUS_OUT_OF_RANGE"}, 105: {Name: "CURAND_STATUS_LENGTH_NOT_MULTIPLE"},
	106: {Name: "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED"}, 201: {Name: "CURAND_STATUS_LAUNCH_FAILURE"},
	202: {Name: "CURAND_STATUS_PREEXISTING_FAILURE"},
	203: {Name: "CURAND_STATUS_INITIALIZATION_FAILED", Sentinel: device.ErrNoDevice, Hint: "cuRAND could not initialize CUDA: is there a GPU (nvidia-smi)?"},
	204: {Name: "CURAND_STATUS_ARCH_MISMATCH"}, 999: {Name: "CURAND_STATUS_INTERNAL_ERROR"},
}}
