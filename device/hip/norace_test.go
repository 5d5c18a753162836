//go:build !race && linux && cgo && !nohip

package hip

const raceEnabled = false
