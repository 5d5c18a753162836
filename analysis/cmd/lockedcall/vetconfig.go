package main

import (
	"encoding/json"
	"os"
	"strings"
)

// onlyForFacts reports whether go vet's config for one package says that
// the package is analyzed only for the facts of the packages that import
// it: a dependency of the packages named, whose findings go vet drops. A
// config that cannot be read says no; the vet tool reports why.
func onlyForFacts(cfgFile string) bool {
	data, err := os.ReadFile(cfgFile)
	if err != nil {
		return false
	}
	var cfg struct{ VetxOnly bool }
	return json.Unmarshal(data, &cfg) == nil && cfg.VetxOnly
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
