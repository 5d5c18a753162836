//go:build race

package main

// raceEnabled reports a -race build, whose instrumentation slows a thousand
// concurrent HTTP exchanges on two cores several times over.
const raceEnabled = true
