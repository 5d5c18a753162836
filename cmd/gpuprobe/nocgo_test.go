//go:build !(linux && cgo)

package main

const cgoBackends = false
