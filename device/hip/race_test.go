//go:build race && linux && cgo && !nohip

package hip

// raceEnabled: the race detector's hooks in syscall.Read allocate.
const raceEnabled = true
