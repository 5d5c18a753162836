// Package build holds the scripts that fetch the CUDA and HIP libraries for
// CI's legs (fetch-cuda-sdk.sh, fetch-hip-sdk.sh), the check that an image's
// binary has its GPU backends (check-gpu-backends.sh), the GPU host's smoke
// test (gpu-smoke.sh), and the tests of all of them, which parse the
// repository's Dockerfiles with Docker's own parser since CI cannot run
// Docker. It is a module of its own, so that buildkit never enters the module
// graph of programs that import gpuinit.
package build
