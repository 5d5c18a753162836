// Command counts measures what the regrouping of package device tracks:
// device's exported names, Runtime's methods, device/driver's exported
// names, Stats' fields, the internal packages, the error types, and the
// README's lines and words per sentence. It reads the source with go/parser
// alone, so it runs on any commit:
//
//	go run ./counts -root ..            # from tools/, over the working tree
//	go run ./counts -root /tmp/old-main # over another checkout
//
// Each figure is printed on a line of its own, "name: value", so that two
// runs can be compared side by side with diff.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	root := flag.String("root", "..", "the gpuinit checkout to measure")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: counts [-root dir]")
		flag.PrintDefaults()
	}
	flag.CommandLine.SetOutput(os.Stdout)
	flag.Parse()
	figures, err := measure(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "counts:", err)
		os.Exit(1)
	}
	for _, f := range figures {
		fmt.Printf("%s: %s\n", f.name, f.value)
	}
}
