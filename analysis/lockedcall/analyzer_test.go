package lockedcall

import (
	"encoding/json"
	"fmt"
	"go/types"
	"reflect"
	"sync"
	"testing"

	"golang.org/x/tools/go/analysis"
	analysischecker "golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"
)

// runOutput is what one run of the analyzer over formPackages exported and
// reported: facts keyed by package, object and fact type, and findings as
// "position: message".
type runOutput struct {
	facts    map[string]analysis.Fact
	findings map[string]bool
}

// TestFactsOnlyExportsTheSameFacts proves that -factsonly, which go vet's
// runs over dependencies get, leaves out work and not facts: every fact of
// every package loaded is the same with and without it, and a run with it
// reports nothing.
func TestFactsOnlyExportsTheSameFacts(t *testing.T) {
	pkgs := loadFormPackages(t)
	full := firstFullRun(t)
	only := analyzeAll(t, pkgs, true)
	if len(only.findings) != 0 {
		t.Errorf("-factsonly reported %d findings, want none", len(only.findings))
	}
	if len(full.findings) == 0 {
		t.Error("the full analysis reported nothing: the packages test nothing")
	}
	compareFacts(t, full.facts, only.facts, "-factsonly")
	kinds := map[string]int{}
	for _, f := range full.facts {
		kinds[reflect.TypeOf(f).Elem().Name()]++
	}
	t.Logf("%d root packages, %d facts by kind %v, %d findings without -factsonly", len(pkgs), len(full.facts), kinds, len(full.findings))
	// Every kind of fact the analyzer exports must have been compared.
	for _, f := range Analyzer.FactTypes {
		if name := reflect.TypeOf(f).Elem().Name(); kinds[name] == 0 {
			t.Errorf("no %s fact among the packages: the comparison does not cover it", name)
		}
	}
}

// TestEveryRunGivesTheSameFactsAndFindings runs the analysis three times: the
// facts and the findings must not change. The analysis memoizes answers to
// questions that depend on each other, so it must ask them in the same order
// each time; a map's order changes from run to run (a FieldSetter fact of
// testing.Benchmark came and went before the order was fixed). The second and
// third runs are over loads of their own, each package's files numbered in
// the order of their names and then in reverse: a driver that parses files in
// parallel numbers them in any order, and an answer that compared positions
// across files changed with it (crypto/tls's handleNewSessionTicket named its
// caller Read in one run of CI and HandleData in the next).
func TestEveryRunGivesTheSameFactsAndFindings(t *testing.T) {
	first := firstFullRun(t)
	var packageFiles [][]string
	packages.Visit(loadFormPackages(t), nil, func(p *packages.Package) {
		packageFiles = append(packageFiles, p.CompiledGoFiles)
	})
	for _, reversed := range []bool{false, true} {
		run := map[bool]string{false: "the run with files numbered by name", true: "the run with files numbered in reverse"}[reversed]
		pkgs, err := loadPackages(parseInOrder(packageFiles, reversed))
		if err != nil {
			t.Fatal(err)
		}
		again := analyzeAll(t, pkgs, false)
		compareFacts(t, first.facts, again.facts, run)
		for f := range first.findings {
			if !again.findings[f] {
				t.Errorf("%s lacks the finding %s", run, f)
			}
		}
		for f := range again.findings {
			if !first.findings[f] {
				t.Errorf("only %s has the finding %s", run, f)
			}
		}
	}
}

// firstFullRun is the analysis of formPackages without -factsonly, run once
// for the tests that compare other runs with it.
func firstFullRun(t *testing.T) runOutput {
	t.Helper()
	out, err := firstFull()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var firstFull = sync.OnceValues(func() (runOutput, error) {
	pkgs, err := formLoad()
	if err != nil {
		return runOutput{}, err
	}
	return analyze(pkgs, false)
})

// analyzeAll runs the analyzer over pkgs and the packages they import.
func analyzeAll(t *testing.T, pkgs []*packages.Package, only bool) runOutput {
	t.Helper()
	out, err := analyze(pkgs, only)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func analyze(pkgs []*packages.Package, only bool) (runOutput, error) {
	old := factsOnly
	factsOnly = only
	defer func() { factsOnly = old }()
	graph, err := analysischecker.Analyze([]*analysis.Analyzer{Analyzer}, pkgs, nil)
	if err != nil {
		return runOutput{}, err
	}
	out := runOutput{facts: map[string]analysis.Fact{}, findings: map[string]bool{}}
	for act := range graph.All() {
		if act.Analyzer != Analyzer {
			continue
		}
		if act.Err != nil {
			return runOutput{}, fmt.Errorf("%s: %v", act.Package.PkgPath, act.Err)
		}
		fset := act.Package.Fset
		for _, d := range act.Diagnostics {
			out.findings[fmt.Sprintf("%s: %s", fset.Position(d.Pos), d.Message)] = true
		}
		pkg := act.Package.Types
		for _, f := range act.AllObjectFacts() {
			if f.Object.Pkg() == pkg {
				key := fmt.Sprintf("%s: %s (%s): %T", act.Package.ID, types.ObjectString(f.Object, nil), fset.Position(f.Object.Pos()), f.Fact)
				out.facts[key] = f.Fact
			}
		}
		for _, f := range act.AllPackageFacts() {
			if f.Package == pkg {
				out.facts[fmt.Sprintf("%s: package: %T", act.Package.ID, f.Fact)] = f.Fact
			}
		}
	}
	return out, nil
}

// compareFacts reports each fact that is not in both sets alike.
func compareFacts(t *testing.T, want, got map[string]analysis.Fact, what string) {
	t.Helper()
	for key, w := range want {
		g, ok := got[key]
		switch {
		case !ok:
			t.Errorf("%s: missing in %s; was %s", key, what, factText(w))
		case factText(g) != factText(w):
			t.Errorf("%s: %s in %s; was %s", key, factText(g), what, factText(w))
		}
	}
	for key, g := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("%s: only in %s: %s", key, what, factText(g))
		}
	}
}

// factText renders every field of a fact, including those its String leaves
// out.
func factText(f analysis.Fact) string {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Sprintf("%#v", f)
	}
	return string(b)
}
