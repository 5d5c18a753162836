// Package cudalink routes the cuda backend's driver calls through mumax's
// cu, in a binary built with -tags cudalink, which links libcuda at build
// time instead of loading it at run time. Import it for its side effect:
//
//	import _ "github.com/gpuinit/gpuinit/device/cuda/cudalink"
//
// It is a module of its own so that only a program that imports it
// downloads mumax: the cuda backend's -tags cudalink build works without it,
// calling the linked libcuda directly. Without the tag it does nothing.
package cudalink
