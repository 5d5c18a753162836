//go:build race

package hostmem

// raceEnabled: the race detector's hooks in syscall.Read allocate.
const raceEnabled = true
