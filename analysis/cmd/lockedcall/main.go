// Command lockedcall reports calls of function values from outside made while
// a sync.Mutex or sync.RWMutex is held: if such a function re-enters, the
// program deadlocks.
//
// Run it standalone on package patterns:
//
//	lockedcall ./...
//
// It prints file:line:col: message for each finding and exits with status 3
// when it reports anything. Or run it through go vet:
//
//	go vet -vettool=$(which lockedcall) ./...
//
// The -interfaces flag also reports interface method calls on parameters,
// fields and package variables. See package
// github.com/gpuinit/gpuinit/analysis/lockedcall for what it finds and what it
// cannot.
package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/gpuinit/gpuinit/analysis/lockedcall"
)

func main() { singlechecker.Main(lockedcall.Analyzer) }
