// Package xid classifies NVIDIA Xid error codes for gpuinit's NVML health
// watcher. It holds NVIDIA's Xid catalog for Ampere and newer GPUs as data
// (code, mnemonic, description, and the catalog's immediate and investigatory
// resolution buckets) and derives from the immediate bucket an Action: Lose
// for an Xid that needs a GPU reset, a reboot, or service, Count for an
// application's error or one that clears, Ignore for the purely informational.
// A code the catalog does not list is counted, never lost, so a newer driver's
// Xid does not take a GPU out of service on a guess. Pure Go, no cgo.
package xid
