// Package hip is gpuinit's AMD ROCm backend, registered as "hip" on Linux with
// cgo (leave it out with -tags nohip): hipInit, the driver and runtime
// versions, devices (name, gfx target as Arch such as "gfx90a", total memory,
// UUID, PCI bus id, compute units) and hipRAND Philox generators.
//
// Loading. The HIP runtime is loaded at the first Init, never at program start
// and never in Open; nothing from ROCm is needed to build. A small C shim
// loads the few functions this package declares with dlopen and dlsym into one
// table. libamdhip64 is found in this order: the file GPUINIT_HIP_LIBRARY
// names; one the process already has (a cgo engine's: two HIP runtimes in one
// process break both); libamdhip64.so.7, .6, .5, then libamdhip64.so through
// the dynamic loader; then the same names in $ROCM_PATH/lib, /opt/rocm/lib and
// WSL2's /usr/lib/wsl/lib. A missing library is a *driver.DriverError with Op
// "dlopen" wrapping driver.ErrDriverNotFound, whose hint says to install the
// ROCm runtime: passing /dev/kfd and /dev/dri into a container fixes "no
// device", not a missing library. libhiprand.so.1 is loaded at the first
// generator, from the chosen libamdhip64's directory first so that their ROCm
// majors match (or the file GPUINIT_HIPRAND_LIBRARY names). The libraries are
// never closed.
//
// Versions never initialize anything: hipDriverGetVersion starts the whole
// runtime, unlike cuDriverGetVersion, so DriverVersion and RuntimeVersion
// report what Init read after hipInit, and before Init return an error
// wrapping driver.ErrNotInitialized.
//
// Device facts. hipDeviceProp_t changed layout between ROCm majors
// (hipGetDevicePropertiesR0600), so this package never reads it: the name,
// total memory and PCI bus id come from HIP's own calls, and the gfx target,
// UUID (rocm-smi's "GPU-" and the KFD unique_id), compute units and the
// integrated flag from the KFD topology in sysfs, matched to each device by
// PCI bus id, with HSA_OVERRIDE_GFX_VERSION applied as HIP applies it. Where
// there is no topology (some containers without /sys, WSL2), those fields stay
// empty. ComputeMajor and ComputeMinor stay zero: HIP reports gfx90a as 9.0,
// which reads as Hopper.
//
// Both 100 (hipErrorNoDevice) and 101 (hipErrorInvalidDevice) from hipInit mean
// "no GPU": ROCm 5.2 answers 101 on every call where /dev/kfd is missing, 5.6
// to 6.1 answer 101 once then 100, 6.2 and later 100. The hint then says what
// is wrong with /dev/kfd, if anything, and which visibility variable hides
// every device.
//
// Thread discipline: HIP's current device and last error are per OS thread,
// and goroutines move between threads. Generate sets the current device and
// then allocates, generates and copies on it, under runtime.LockOSThread
// throughout, and restores the thread's previous device.
//
// Without cgo, off Linux or with -tags nohip, the package registers "hip" as
// unavailable, with the reason, so that Open("hip") and auto say why.
package hip
