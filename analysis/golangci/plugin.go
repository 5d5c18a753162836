// Package golangci registers lockedcall as a golangci-lint module plugin, so
// that a project that lints with golangci-lint can enable it in its
// configuration rather than run it as a separate go vet step.
//
// Build a golangci-lint that includes it with golangci-lint custom and a
// .custom-gcl.yml such as
//
//	version: v2.15.0
//	plugins:
//	  - module: github.com/gpuinit/gpuinit/analysis
//	    import: github.com/gpuinit/gpuinit/analysis/golangci
//	    version: latest
//
// and enable it in .golangci.yml:
//
//	linters:
//	  enable:
//	    - lockedcall
//	  settings:
//	    custom:
//	      lockedcall:
//	        type: module
//	        settings:
//	          interfaces: false
package golangci

import (
	"strconv"

	"github.com/golangci/plugin-module-register/register"
	"golang.org/x/tools/go/analysis"

	"github.com/gpuinit/gpuinit/analysis/lockedcall"
)

func init() { register.Plugin("lockedcall", New) }

// Settings are the plugin's settings in .golangci.yml.
type Settings struct {
	// Interfaces also reports interface method calls under a lock, as the
	// -interfaces flag does.
	Interfaces bool `json:"interfaces"`
}

// New is the plugin's constructor, which golangci-lint calls with the
// settings from its configuration.
func New(settings any) (register.LinterPlugin, error) {
	s, err := register.DecodeSettings[Settings](settings)
	if err != nil {
		return nil, err
	}
	return &plugin{settings: s}, nil
}

type plugin struct{ settings Settings }

// BuildAnalyzers returns lockedcall's analyzer with the settings applied.
func (p *plugin) BuildAnalyzers() ([]*analysis.Analyzer, error) {
	if err := lockedcall.Analyzer.Flags.Set("interfaces", strconv.FormatBool(p.settings.Interfaces)); err != nil {
		return nil, err
	}
	return []*analysis.Analyzer{lockedcall.Analyzer}, nil
}

// GetLoadMode asks for type information: the analyzer builds SSA and uses
// facts across packages.
func (p *plugin) GetLoadMode() string { return register.LoadModeTypesInfo }
