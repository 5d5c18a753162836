// Package host reads what the host shows of its GPUs without a library call.
// Every read goes under the roots Sys, Dev and Proc: /sys, /dev and /proc
// unless GPUINIT_SYSFS_ROOT, GPUINIT_DEV_ROOT or GPUINIT_PROC_ROOT moves them,
// for containers that mount the host's trees elsewhere and for tests that
// build a fake one. It is pure Go, without cgo, and safe for concurrent use:
// it keeps no state but the meminfo path, read once.
//
// # Memory
//
// ReadMemory reads /proc/meminfo as the kernel accounts it, for GPUs that
// share the host's memory. MemAvailable counts the page cache as available;
// MemFree does not, which is why a CUDA runtime that reports MemFree on
// Jetson and GB10 refuses to start with a full page cache. ReadMemory and
// ReadCounter allocate nothing but on failure.
//
// # The NVIDIA kernel module
//
// ReadNVModule reads /proc/driver/nvidia/version, which exists only while the
// module is loaded, and the device nodes /dev/nvidiactl, /dev/nvidia-uvm and
// /dev/nvidia0 and on. It tells "no module" from "no device" (libcuda
// answers 100 to both). It tells "not yet" from "no GPU here": device nodes
// without a device the driver will give.
//
// # The amdgpu kernel driver
//
// KFDNodes reads the KFD topology (/sys/class/kfd/kfd/topology/nodes) for
// each GPU's gfx target, unique id and compute units; VRAM reads the PCI
// device's VRAM counters. The hip backend uses them because
// hipDeviceProp_t changed layout between ROCm majors. KFD nodes are not
// numbered like HIP ordinals, and a container sees every GPU of the host
// there, so nodes are matched to devices by PCI bus id, never by index.
// HSA_OVERRIDE_GFX_VERSION is applied as HIP applies it. KFDProblem says what
// keeps a process from opening /dev/kfd, the commonest reason ROCm finds no
// GPU.
//
// ReadRAS reads amdgpu's RAS error counters: one file per hardware block
// under the GPU's PCI device, ras/<block>_err_count, each holding the
// block's uncorrectable ("ue: N") and correctable ("ce: N") counts since
// boot. A board without RAS has no ras directory.
package host
