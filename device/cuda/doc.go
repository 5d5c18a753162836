// Package cuda is gpuinit's NVIDIA backend, registered as "cuda" when built with
// -tags cuda (and cgo): cuInit, the driver version, devices (name, compute
// capability as Arch "sm_XY", total memory) through github.com/mumax/3/cuda/cu,
// and, through this package's own small cgo, error names, the primary context
// and cuRAND Philox generators.
//
// mumax's functions panic with a cu.Result on failure; every call goes through
// a boundary that turns such a panic into a *device.DriverError with the raw
// code, the name from cuGetErrorName and a hint, so no panic escapes.
//
// Thread discipline: the CUDA current context is per OS thread, and goroutines
// move between threads. cuInit, cuDriverGetVersion and the device queries need
// no context. Anything that makes a context current and then uses it (device
// generators: retain the primary context, make it current, allocate, generate,
// copy back) runs under runtime.LockOSThread from start to finish.
//
// A binary linked with -lcuda does not start where libcuda.so.1 is missing: the
// dynamic loader stops it before main, so this backend never sees that case.
//
// Without the cuda tag the package is empty and registers nothing, so that
// importing it (as package backends does) is harmless.
package cuda
