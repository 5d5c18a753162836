// Package docnames keeps the docs true to the code. Its tests check that
// the Go names the docs give exist (device.Open, rt.Stats().Lost, the doc
// links). In the Markdown docs, every code span that names a Go name, a
// GPUINIT_ variable or a path must name one that exists. Every relative
// link must lead to a file or heading that exists.
//
// Its functions read a package doc's blocks, for the tests elsewhere that
// keep a block quoted in a doc equal to what the code prints.
package docnames
