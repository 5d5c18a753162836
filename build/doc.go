// Package build holds the scripts that fetch the CUDA and HIP SDKs
// (fetch-cuda-sdk.sh, fetch-hip-sdk.sh) and the tests that check the
// repository's Dockerfiles with Docker's own parser, since CI cannot run Docker.
package build
