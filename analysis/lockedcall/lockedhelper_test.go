package lockedcall

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestTheWitnessDoesNotDependOnParseOrder loads witnessorder twice, its files
// numbered once in the order of their names and once in reverse, as a driver
// that parses files in parallel may number them. A locked helper reached from both files must name the same caller, the first
// in the source, in both (crypto/tls's handleNewSessionTicket named Read in one
// run of CI and HandleData in the next).
func TestTheWitnessDoesNotDependOnParseOrder(t *testing.T) {
	const want = "call of c.now (a field) while c.in is held " +
		"(handleTicket runs with it held: Read → handlePost → handleTicket); " +
		"if c.now re-enters, this deadlocks"
	for _, reversed := range []bool{false, true} {
		out, err := analyze(loadWitnessOrder(t, reversed), false)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for f := range out.findings {
			if filepath.Base(filepath.Dir(f)) == "witnessorder" {
				got = append(got, f)
			}
		}
		if len(got) != 1 || !strings.HasSuffix(got[0], ": "+want) {
			t.Errorf("files numbered in reverse: %v; findings %q, want one ending %q", reversed, got, want)
		}
	}
}

// loadWitnessOrder loads testdata's witnessorder with what it imports, its
// files numbered in the order of their names or in reverse.
func loadWitnessOrder(t *testing.T, reversed bool) []*packages.Package {
	t.Helper()
	gopath, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(gopath, "src", "witnessorder")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles | packages.NeedImports |
			packages.NeedTypes | packages.NeedTypesSizes | packages.NeedSyntax | packages.NeedTypesInfo |
			packages.NeedDeps,
		Dir:       dir,
		Env:       append(os.Environ(), "GOPATH="+gopath, "GO111MODULE=off", "GOWORK=off"),
		ParseFile: parseInOrder([][]string{files}, reversed),
	}
	pkgs, err := packages.Load(cfg, ".")
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("witnessorder did not load")
	}
	syntax := pkgs[0].Syntax
	if len(syntax) != 2 || (syntax[0].Pos() > syntax[1].Pos()) != reversed {
		t.Fatalf("the files were not numbered as asked (reversed: %v): %d files", reversed, len(syntax))
	}
	return pkgs
}
