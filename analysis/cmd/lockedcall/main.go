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
// As go vet's tool, it analyzes a dependency of the packages named only for
// its facts (-factsonly), and lets each run's heap grow to 64 MiB before the
// first collection (unless GOGC or GOMEMLIMIT is set): it then costs about
// what go vet costs in time, and 1.2 to 1.3 times its memory (FINDINGS.md).
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
	args := os.Args[1:]
	if invokedByVet(args) {
		if cfg := args[len(args)-1]; strings.HasSuffix(cfg, ".cfg") {
			startHeap(startHeapSize)
			if onlyForFacts(cfg) {
				lockedcall.Analyzer.Flags.Set("factsonly", "true")
			}
		}
		singlechecker.Main(lockedcall.Analyzer)
		return
	}
	os.Exit(standalone(args, os.Stdout, os.Stderr))
}
