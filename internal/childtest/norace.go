//go:build !race

package childtest

// raceBuilt reports that this test binary has the race detector.
const raceBuilt = false
