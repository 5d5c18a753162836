package drivercodes

import "github.com/gpuinit/gpuinit/device/driver"

// Hints shared by several codes and by the loaders.
const (
	CUDANoDeviceHint = "check CUDA_VISIBLE_DEVICES (empty, -1 or a wrong UUID hides every GPU) and run nvidia-smi; in a container, run with --gpus all and the NVIDIA container toolkit"
	// CUDANotFoundHint is for a libcuda.so.1 that cannot be loaded.
	CUDANotFoundHint = "install the NVIDIA driver; in a container, run with --gpus all (the NVIDIA container toolkit); or set GPUINIT_CUDA_LIBRARY to its file"
	stickyCUDAHint   = "the device is unusable for the rest of this process (a sticky error): restart the process; if it recurs, check dmesg for Xid errors and run nvidia-smi -q"
)

// CUDA are the CUresult values users meet when bringing up or running a GPU.
var CUDA = &driver.CodeTable{Backend: "cuda", Unnamed: "CUresult", Codes: map[int]driver.Code{
	3:   {Name: "CUDA_ERROR_NOT_INITIALIZED", Hint: "cuInit has not succeeded in this process"},
	34:  {Name: "CUDA_ERROR_STUB_LIBRARY", Sentinel: driver.ErrDriverNotFound, Hint: "the process loaded the CUDA toolkit's link stub (libcuda.so from a -dev package) instead of the driver: install the NVIDIA driver, or remove the stubs directory from LD_LIBRARY_PATH or GPUINIT_CUDA_LIBRARY"},
	35:  {Name: "CUDA_ERROR_INSUFFICIENT_DRIVER", Sentinel: driver.ErrDriverTooOld, Hint: "the NVIDIA driver is older than this CUDA version needs: upgrade the driver (nvidia-smi shows its version)"},
	100: {Name: "CUDA_ERROR_NO_DEVICE", Sentinel: driver.ErrNoDevice, Hint: CUDANoDeviceHint},
	101: {Name: "CUDA_ERROR_INVALID_DEVICE", Sentinel: driver.ErrInvalidDevice, Hint: "the ordinal is outside 0..count-1; CUDA_VISIBLE_DEVICES renumbers devices"},
	209: {Name: "CUDA_ERROR_NO_BINARY_FOR_GPU", Sentinel: driver.ErrNotSupported, Hint: "the engine has no kernel image for this GPU's compute capability: use a build of the engine that includes it (or PTX for it)"},
	214: {Name: "CUDA_ERROR_ECC_UNCORRECTABLE", Sticky: true, Hint: "an uncorrectable ECC error: " + stickyCUDAHint + "; the GPU may need a reset (nvidia-smi -r) or replacing"},
	700: {Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Sticky: true, Hint: "a kernel touched an illegal address: " + stickyCUDAHint},
	702: {Name: "CUDA_ERROR_LAUNCH_TIMEOUT", Sticky: true, Hint: "a kernel ran past the display watchdog: " + stickyCUDAHint},
	710: {Name: "CUDA_ERROR_ASSERT", Sticky: true, Hint: "a device-side assert fired: " + stickyCUDAHint},
	714: {Name: "CUDA_ERROR_HARDWARE_STACK_ERROR", Sticky: true, Hint: stickyCUDAHint},
	715: {Name: "CUDA_ERROR_ILLEGAL_INSTRUCTION", Sticky: true, Hint: stickyCUDAHint},
	716: {Name: "CUDA_ERROR_MISALIGNED_ADDRESS", Sticky: true, Hint: stickyCUDAHint},
	717: {Name: "CUDA_ERROR_INVALID_ADDRESS_SPACE", Sticky: true, Hint: stickyCUDAHint},
	718: {Name: "CUDA_ERROR_INVALID_PC", Sticky: true, Hint: stickyCUDAHint},
	719: {Name: "CUDA_ERROR_LAUNCH_FAILED", Sticky: true, Hint: "a kernel failed: " + stickyCUDAHint},
	800: {Name: "CUDA_ERROR_NOT_PERMITTED", Hint: "the operation is not permitted: check the permissions of /dev/nvidia* and the container's device cgroup"},
	802: {Name: "CUDA_ERROR_SYSTEM_NOT_READY", Sentinel: driver.ErrNotReady, Hint: "the system is not ready: on HGX/DGX boards with NVSwitch, start the fabric manager (systemctl start nvidia-fabricmanager) and check its version matches the driver"},
	803: {Name: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", Sentinel: driver.ErrDriverMismatch, Hint: "the user-space driver (libcuda) and the kernel module differ: reboot after a driver upgrade, or match the container's libcuda to the host driver"},
	804: {Name: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", Sentinel: driver.ErrDriverMismatch, Hint: "forward compatibility (the cuda-compat package) is not supported on this GPU: use a CUDA version the host driver supports natively, or remove cuda-compat from the library path"},
	999: {Name: "CUDA_ERROR_UNKNOWN", Hint: "often after suspend/resume: reload nvidia_uvm (rmmod nvidia_uvm && modprobe nvidia_uvm) or reboot"},
}}

// CURAND are the curandStatus_t values.
var CURAND = &driver.CodeTable{Backend: "cuda", Unnamed: "curandStatus", Codes: map[int]driver.Code{
	100: {Name: "CURAND_STATUS_VERSION_MISMATCH"}, 101: {Name: "CURAND_STATUS_NOT_INITIALIZED"},
	102: {Name: "CURAND_STATUS_ALLOCATION_FAILED"}, 103: {Name: "CURAND_STATUS_TYPE_ERROR"},
	104: {Name: "CURAND_STATUS_OUT_OF_RANGE"}, 105: {Name: "CURAND_STATUS_LENGTH_NOT_MULTIPLE"},
	106: {Name: "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED"}, 201: {Name: "CURAND_STATUS_LAUNCH_FAILURE"},
	202: {Name: "CURAND_STATUS_PREEXISTING_FAILURE"},
	203: {Name: "CURAND_STATUS_INITIALIZATION_FAILED", Sentinel: driver.ErrNoDevice, Hint: "cuRAND could not initialize CUDA: is there a GPU (nvidia-smi)?"},
	204: {Name: "CURAND_STATUS_ARCH_MISMATCH"}, 999: {Name: "CURAND_STATUS_INTERNAL_ERROR"},
}}
