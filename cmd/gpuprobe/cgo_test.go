//go:build linux && cgo

package main

// cgoBackends reports a build in which gpuprobe has its GPU backends.
const cgoBackends = true
