// Package cuda is gpuinit's NVIDIA backend, registered as "cuda" on Linux with
// cgo (leave it out with -tags nocuda): cuInit, the driver version, devices
// (name, compute capability as Arch "sm_XY", total memory, UUID, PCI bus id,
// multiprocessors), the primary context and cuRAND Philox generators.
//
// Loading. The driver is loaded at the first Init, never at program start and
// never in Open, so one binary starts on CPU-only, NVIDIA and AMD hosts.
// Nothing from the CUDA toolkit is needed to build: this package declares the
// few types and functions it calls, and a small C shim loads them with dlopen
// and dlsym into one table. The library is found in this order:
//   - the file GPUINIT_CUDA_LIBRARY names, if set;
//   - a libcuda.so.1 the process already has (RTLD_NOLOAD): a cgo engine such
//     as llama.cpp or TensorRT may have loaded it, and it is used as is;
//   - libcuda.so.1 through the dynamic loader (LD_LIBRARY_PATH, ld.so.cache);
//   - /usr/lib/wsl/lib/libcuda.so.1, where WSL2 keeps it.
//
// Only libcuda.so.1: the bare libcuda.so is, in build images, the toolkit's
// link stub, which answers CUDA_ERROR_STUB_LIBRARY (34) to every call; a stub
// found anyway is reported as such, with its path and a hint. A missing
// library is a *driver.DriverError with Op "dlopen" wrapping
// driver.ErrDriverNotFound. The library is never closed.
//
// Versioned symbols are asked for by name, as the header macros would pick
// them: cuDeviceTotalMem_v2 (the unversioned one has a 32-bit size),
// cuMemAlloc_v2, cuMemFree_v2, cuMemcpyDtoH_v2, cuDevicePrimaryCtxRelease_v2,
// cuMemGetInfo_v2. A missing required symbol is a *driver.DriverError wrapping
// driver.ErrDriverMismatch that names it. cuDeviceGetUuid_v2 (CUDA 11.4) and
// cuDeviceGetUuid are optional: without either, Info.UUID stays empty.
//
// libcurand.so.10 is loaded when the first generator is created (or the file
// GPUINIT_CURAND_LIBRARY names: GPU hosts often have it only inside the
// nvidia-curand Python wheel). Without it, generation fails with an error
// wrapping driver.ErrNotSupported; the device stays usable.
//
// With -tags cudalink libcuda is linked at build time instead: the backend
// calls the driver through github.com/mumax/3/cuda/cu where that package has
// the call, and through <cuda.h> elsewhere, and RuntimeVersion reports the
// CUDA_VERSION it was built against. That build needs the CUDA toolkit, and
// the binary needs libcuda.so.1 to start at all (not libcurand, which is
// loaded at run time in both modes). The backend's logic, error mapping and
// tests are the same in both modes.
//
// Thread discipline: the CUDA current context is per OS thread, and goroutines
// move between threads. cuInit, cuDriverGetVersion and the device queries need
// no context. Anything that makes a context current and then uses it runs
// under runtime.LockOSThread from start to finish, and restores the thread's
// previous context.
//
// Without cgo, off Linux or with -tags nocuda, the package registers "cuda" as
// unavailable, with the reason, so that Open("cuda") and auto say why.
package cuda
