package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOnlyForFactsReadsVetsConfig proves that a dependency's run, and only
// one, is analyzed for facts alone.
func TestOnlyForFactsReadsVetsConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, config string
		want         bool
	}{
		{"a dependency", `{"ImportPath": "fmt", "VetxOnly": true}`, true},
		{"a package named on the command line", `{"ImportPath": "example.com/a", "VetxOnly": false}`, false},
		{"an older config without the field", `{"ImportPath": "example.com/a"}`, false},
		{"a config that is not JSON", `VetxOnly: true`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, "vet.cfg")
			if err := os.WriteFile(file, []byte(tc.config), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := onlyForFacts(file); got != tc.want {
				t.Errorf("onlyForFacts(%s) = %t, want %t", tc.config, got, tc.want)
			}
		})
	}
	if onlyForFacts(filepath.Join(dir, "missing.cfg")) {
		t.Error("a config that cannot be read says facts only")
	}
}
