// Package hip is gpuinit's AMD ROCm backend, registered as "hip" when built with
// -tags hip (and cgo): hipInit, the driver and runtime versions, devices (name,
// gcnArchName as Arch such as "gfx90a", total memory) and hipRAND Philox
// generators, through this package's own small cgo.
//
// Both 100 (hipErrorNoDevice) and 101 (hipErrorInvalidDevice) from hipInit mean
// "no GPU": ROCm 5.2 answers 101 on every call where /dev/kfd is missing, 5.6 to
// 6.1 answer 101 once then 100, 6.2 and later 100.
//
// Thread discipline: HIP's current device and last error are per OS thread, and
// goroutines move between threads. hipInit, the version queries,
// hipGetDeviceCount and hipGetDeviceProperties take the device as an argument
// and need no pinning. Generate sets the current device and then allocates,
// generates and copies on it, so it runs under runtime.LockOSThread throughout.
//
// Without the hip tag the package is empty and registers nothing.
package hip
