// Package docnames holds the test that the Go names README.md and the
// packages' doc comments give (device.Open, rt.Stats().Lost, the doc links)
// are names the code has. It has no code of its own.
package docnames
