// Package drivercodes holds the raw code tables of the CUDA, cuRAND, HIP and
// hipRAND libraries: for each code users meet, its name, the device sentinel it
// means, whether it leaves the device unusable, and a hint. The real backends
// and sim, which imitates CUDA, build their errors from the same tables, so a
// code means one thing everywhere. It also adds to a no-device error's hint
// what likeliest caused it: a visibility variable that hides every device, or
// (for HIP) a /dev/kfd the process cannot open. Pure Go, compiled in every
// build.
package drivercodes
