//go:build race

package host

// raceEnabled: the race detector's hooks in syscall.Read allocate.
const raceEnabled = true
