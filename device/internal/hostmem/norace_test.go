//go:build !race

package hostmem

const raceEnabled = false
