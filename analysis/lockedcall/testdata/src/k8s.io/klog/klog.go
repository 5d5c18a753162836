// Package klog is a fixture of TestTheFormIsBuildssas, not of analysistest.
// ctrlflow knows that Fatal never returns without reading its body, so its
// call of os.Exit ends no block in the package's SSA form; the function
// literal in it is read, as every literal is, so its call of log.Fatal does.
package klog

import (
	"log"
	"os"
)

func Fatal(args ...any) {
	os.Exit(255)
	println("after")
	defer func() {
		log.Fatal("deferred")
	}()
}
