// Package drivercodes holds the raw code tables of the CUDA, cuRAND, HIP and
// hipRAND libraries: for each code users meet, its name, the device sentinel it
// means, whether it leaves the device unusable, and a hint. The real backends
// and sim, which imitates CUDA, build their errors from the same tables, so a
// code means one thing everywhere. Pure Go, compiled in every build.
package drivercodes
