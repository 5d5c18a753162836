// Command lockedcall reports calls of function values from outside made while
// a sync.Mutex or sync.RWMutex is held: if such a function re-enters, the
// program deadlocks.
//
// Run it standalone on package patterns:
//
//	lockedcall ./...
//
// It prints file:line:col: message for each finding on standard output and
// exits with status 3 when it reports anything; with -json it prints what
// go vet -json prints. Or run it through go vet:
//
//	go vet -vettool=$(which lockedcall) ./...
//
// Standalone, it runs exactly that: go vet with itself as the vet tool, which
// analyzes one package at a time from its dependencies' export data and facts,
// so that a large tree (the standard library) costs what go vet costs, and a
// second run replays go vet's cache.
//
// The -interfaces flag also reports interface method calls on parameters,
// fields and package variables. See package
// github.com/gpuinit/gpuinit/analysis/lockedcall for what it finds and what it
// cannot.
package main

import (
	"os"
	"strings"

	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/gpuinit/gpuinit/analysis/lockedcall"
)

func main() {
	if invokedByVet(os.Args[1:]) {
		singlechecker.Main(lockedcall.Analyzer)
		return
	}
	os.Exit(standalone(os.Args[1:], os.Stdout, os.Stderr))
}

// invokedByVet reports whether go vet runs the command as its vet tool: to
// ask its version (-V=full) or flags (-flags), or on one package's .cfg file.
func invokedByVet(args []string) bool {
	for _, a := range args {
		if a == "-V=full" || a == "-V" || a == "-flags" {
			return true
		}
	}
	return len(args) > 0 && strings.HasSuffix(args[len(args)-1], ".cfg")
}
