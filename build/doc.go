// Package build holds the scripts that fetch the CUDA and HIP libraries for
// CI's legs (fetch-cuda-sdk.sh, fetch-hip-sdk.sh), the check that an image's
// binary has its GPU backends (check-gpu-backends.sh), the GPU host's smoke
// test (gpu-smoke.sh), and the tests of all of them: the scripts run over
// stand-ins (the repository's fake drivers; apt-get and dpkg replaced on PATH,
// so the fetch scripts' tests download nothing and only CI's legs fetch for
// real), and the repository's Dockerfiles are parsed with Docker's own parser
// since CI cannot run Docker. It is a module of its own, so that buildkit
// never enters the module graph of programs that import gpuinit.
package build
