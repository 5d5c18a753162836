// Package drivercodes says what the drivers' codes mean, as data.
//
// It holds the raw code tables of the CUDA, cuRAND, NVML, HIP and hipRAND
// libraries: for each code users meet, its name, the device sentinel it
// means, whether it leaves the device unusable, and a hint. The real backends
// and sim, which imitates CUDA, build their errors from the same tables, so a
// code means one thing everywhere. It also adds to a no-device error's hint
// what likeliest caused it: a visibility variable that hides every device, or
// (for HIP) a /dev/kfd the process cannot open.
//
// ClassifyXid classifies NVIDIA Xid error codes for the NVML health watcher.
// The package holds NVIDIA's Xid catalog for Ampere and newer GPUs as data
// (code, mnemonic, description, and the catalog's immediate and investigatory
// resolution buckets). From the immediate bucket it derives an XidAction:
// XidLose for an Xid that needs a GPU reset, a reboot, or service, XidCount
// for an application's error or one that clears, XidIgnore for the purely
// informational. A code the catalog does not list is counted, never lost, so
// a newer driver's Xid does not take a GPU out of service on a guess.
//
// KindOf and KindSentinel name an error's kind by the sentinel it wraps, for
// the preflight child's report, the health status and gpuprobe's report.
//
// Everything here is read-only data and pure functions, safe for concurrent
// use. Pure Go, compiled in every build.
package drivercodes
