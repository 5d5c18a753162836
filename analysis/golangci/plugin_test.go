package golangci_test

import (
	"testing"

	"github.com/golangci/plugin-module-register/register"

	_ "github.com/gpuinit/gpuinit/analysis/golangci"
)

// TestPluginLoads does what golangci-lint does with a module plugin: look it
// up by the name the configuration uses, build it from its settings, and ask
// for its analyzers and load mode.
func TestPluginLoads(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings any
		want     string // the -interfaces flag after BuildAnalyzers
	}{
		{"no settings", nil, "false"},
		{"interfaces on", map[string]any{"interfaces": true}, "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newPlugin, err := register.GetPlugin("lockedcall")
			if err != nil {
				t.Fatal(err)
			}
			p, err := newPlugin(tc.settings)
			if err != nil {
				t.Fatal(err)
			}
			analyzers, err := p.BuildAnalyzers()
			if err != nil {
				t.Fatal(err)
			}
			if len(analyzers) != 1 || analyzers[0].Name != "lockedcall" {
				t.Fatalf("analyzers: %v, want lockedcall alone", analyzers)
			}
			if got := analyzers[0].Flags.Lookup("interfaces").Value.String(); got != tc.want {
				t.Errorf("-interfaces is %s, want %s", got, tc.want)
			}
			if mode := p.GetLoadMode(); mode != register.LoadModeTypesInfo {
				t.Errorf("load mode %q, want %q", mode, register.LoadModeTypesInfo)
			}
		})
	}
}

// TestPluginRejectsBadSettings: a typo'd type in the configuration is an
// error at load, not a silent default.
func TestPluginRejectsBadSettings(t *testing.T) {
	newPlugin, err := register.GetPlugin("lockedcall")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newPlugin(map[string]any{"interfaces": "yes"}); err == nil {
		t.Error("settings with interfaces: \"yes\" were accepted")
	}
}
