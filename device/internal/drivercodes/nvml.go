package drivercodes

import "github.com/gpuinit/gpuinit/device/driver"

// NVML are the nvmlReturn_t values, by the names nvml.h gives them.
var NVML = &driver.CodeTable{Backend: "cuda", Unnamed: "nvmlReturn_t", Codes: map[int]driver.Code{
	1: {Name: "NVML_ERROR_UNINITIALIZED"}, 2: {Name: "NVML_ERROR_INVALID_ARGUMENT"},
	3: {Name: "NVML_ERROR_NOT_SUPPORTED", Sentinel: driver.ErrNotSupported},
	4: {Name: "NVML_ERROR_NO_PERMISSION", Hint: "NVML needs read access to /dev/nvidiactl and the GPUs' device nodes; in a container, the NVIDIA container toolkit passes them in"},
	5: {Name: "NVML_ERROR_ALREADY_INITIALIZED"}, 6: {Name: "NVML_ERROR_NOT_FOUND"},
	7: {Name: "NVML_ERROR_INSUFFICIENT_SIZE"}, 8: {Name: "NVML_ERROR_INSUFFICIENT_POWER"},
	9: {Name: "NVML_ERROR_DRIVER_NOT_LOADED", Sentinel: driver.ErrDriverNotFound,
		Hint: "the NVIDIA kernel module is not loaded: install the driver, or modprobe nvidia"},
	10: {Name: "NVML_ERROR_TIMEOUT"}, 11: {Name: "NVML_ERROR_IRQ_ISSUE"},
	12: {Name: "NVML_ERROR_LIBRARY_NOT_FOUND"}, 13: {Name: "NVML_ERROR_FUNCTION_NOT_FOUND"},
	14: {Name: "NVML_ERROR_CORRUPTED_INFOROM", Hint: "the GPU's InfoROM is corrupt: the GPU needs service"},
	15: {Name: "NVML_ERROR_GPU_IS_LOST", Hint: "the GPU has fallen off the bus or is otherwise inaccessible: check dmesg for Xid 79; the host may need a reboot"},
	16: {Name: "NVML_ERROR_RESET_REQUIRED", Hint: "the GPU needs a reset (nvidia-smi -r) before it can be used again"},
	17: {Name: "NVML_ERROR_OPERATING_SYSTEM"},
	18: {Name: "NVML_ERROR_LIB_RM_VERSION_MISMATCH", Sentinel: driver.ErrDriverMismatch,
		Hint: "libnvidia-ml and the kernel module differ: reboot after a driver upgrade, or match the container's NVML to the host driver"},
	19: {Name: "NVML_ERROR_IN_USE"}, 20: {Name: "NVML_ERROR_MEMORY"}, 21: {Name: "NVML_ERROR_NO_DATA"},
	22: {Name: "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED"}, 23: {Name: "NVML_ERROR_INSUFFICIENT_RESOURCES"},
	24: {Name: "NVML_ERROR_FREQ_NOT_SUPPORTED"}, 25: {Name: "NVML_ERROR_ARGUMENT_VERSION_MISMATCH"},
	26: {Name: "NVML_ERROR_DEPRECATED"}, 27: {Name: "NVML_ERROR_NOT_READY"}, 28: {Name: "NVML_ERROR_GPU_NOT_FOUND"},
	29: {Name: "NVML_ERROR_INVALID_STATE"}, 999: {Name: "NVML_ERROR_UNKNOWN"},
}}
