//go:build race && linux && cgo && !nocuda

package cuda

// raceEnabled: the race detector's hooks in syscall.Read allocate.
const raceEnabled = true
