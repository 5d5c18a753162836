// Package docnames keeps the docs true to the code. Its tests check that
// the Go names README.md and the packages' doc comments give exist
// (device.Open, rt.Stats().Lost, the doc links).
//
// Its functions read a package doc's blocks, for the tests elsewhere that
// keep a block quoted in a doc equal to what the code prints.
package docnames
