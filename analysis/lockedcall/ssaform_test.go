package lockedcall

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"golang.org/x/tools/go/analysis"
	analysischecker "golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/analysis/passes/buildssa"
	"golang.org/x/tools/go/analysis/passes/ctrlflow"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
)

// formPackages are the packages the equivalence tests load, with everything
// they import: every package of testdata, and standard library packages
// chosen for their locks, hooks and functions that never return (the
// runtime's throw, log.Fatal, testing's FailNow, go/types' unreachable).
var formPackages = []string{"./...", "net/http", "log/slog", "testing", "os/exec", "go/types", "text/template"}

// loadFormPackages loads formPackages from testdata's GOPATH tree, as
// analysistest does, with their imports from source. The tests share one
// load: analyses do not change the packages.
func loadFormPackages(t *testing.T) []*packages.Package {
	t.Helper()
	if testing.Short() {
		t.Skip("loads and analyzes a few hundred packages")
	}
	pkgs, err := formLoad()
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

var formLoad = sync.OnceValues(func() ([]*packages.Package, error) { return loadPackages(nil) })

// loadPackages loads formPackages, parsing their files with parseFile (nil
// for go/packages' own).
func loadPackages(parseFile func(*token.FileSet, string, []byte) (*ast.File, error)) ([]*packages.Package, error) {
	gopath, err := filepath.Abs("testdata")
	if err != nil {
		return nil, err
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles | packages.NeedImports |
			packages.NeedTypes | packages.NeedTypesSizes | packages.NeedSyntax | packages.NeedTypesInfo |
			packages.NeedDeps | packages.NeedModule,
		Dir:       filepath.Join(gopath, "src"),
		Env:       append(os.Environ(), "GOPATH="+gopath, "GO111MODULE=off", "GOWORK=off"),
		ParseFile: parseFile,
	}
	pkgs, err := packages.Load(cfg, formPackages...)
	if err != nil {
		return nil, err
	}
	var errs []error
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			errs = append(errs, e)
		}
	})
	return pkgs, errors.Join(errs...)
}

// parseInOrder returns a parser for packages.Config.ParseFile that numbers
// each package's files in a fixed order, whatever order go/packages asks in:
// the first time one of a package's files is asked for, it parses them all,
// in the order of their names, or in reverse. packageFiles lists each
// package's files; another file is parsed alone.
func parseInOrder(packageFiles [][]string, reversed bool) func(*token.FileSet, string, []byte) (*ast.File, error) {
	const mode = parser.AllErrors | parser.ParseComments | parser.SkipObjectResolution
	type group struct {
		once   sync.Once
		names  []string
		parsed map[string]*ast.File
		errs   map[string]error
	}
	groups := map[string]*group{}
	for _, files := range packageFiles {
		g := &group{names: slices.Sorted(slices.Values(files)), parsed: map[string]*ast.File{}, errs: map[string]error{}}
		if reversed {
			slices.Reverse(g.names)
		}
		for _, name := range files {
			groups[name] = g
		}
	}
	return func(fset *token.FileSet, filename string, src []byte) (*ast.File, error) {
		g := groups[filename] // only read: the map is complete before the first call
		if g == nil {
			return parser.ParseFile(fset, filename, src, mode)
		}
		g.once.Do(func() {
			for _, name := range g.names {
				g.parsed[name], g.errs[name] = parser.ParseFile(fset, name, nil, mode)
			}
		})
		return g.parsed[filename], g.errs[filename]
	}
}

// TestTheFormIsBuildssas proves that the SSA form lockedcall builds for
// itself is buildssa's, function by function and instruction by instruction,
// and that its NoReturn facts are ctrlflow's, in every package loaded: what
// the analysis sees did not change when it stopped requiring them.
func TestTheFormIsBuildssas(t *testing.T) {
	pkgs := loadFormPackages(t)
	var mu sync.Mutex
	var diffs []string
	var packagesSeen, funcsSeen, noReturnSeen int
	compare := &analysis.Analyzer{
		Name:      "formcheck",
		Doc:       "compares lockedcall's SSA form with buildssa's",
		Requires:  []*analysis.Analyzer{buildssa.Analyzer, ctrlflow.Analyzer},
		FactTypes: []analysis.Fact{new(NoReturn)},
		Run: func(pass *analysis.Pass) (any, error) {
			ours := buildForm(pass)
			theirs := pass.ResultOf[buildssa.Analyzer].(*buildssa.SSA)
			cfgs := pass.ResultOf[ctrlflow.Analyzer].(*ctrlflow.CFGs)
			var found []string
			never := 0
			for _, decl := range funcDecls(pass) {
				fn := pass.TypesInfo.Defs[decl.Name].(*types.Func)
				ourNever := pass.ImportObjectFact(fn, new(NoReturn))
				if ourNever != cfgs.NoReturn(fn) {
					found = append(found, fmt.Sprintf("%s: NoReturn %t, ctrlflow says %t", fn.FullName(), ourNever, cfgs.NoReturn(fn)))
				}
				if ourNever {
					never++
				}
			}
			// The analysis reads the package initializer too, with the
			// literals of package variables.
			ourFuncs := packageFuncs(ours)
			theirFuncs := packageFuncs(form{pkg: theirs.Pkg, funcs: theirs.SrcFuncs})
			if len(ourFuncs) != len(theirFuncs) {
				found = append(found, fmt.Sprintf("%s: %d functions, buildssa has %d", pass.Pkg.Path(), len(ourFuncs), len(theirFuncs)))
			} else {
				for i, fn := range ourFuncs {
					if a, b := functionText(fn), functionText(theirFuncs[i]); a != b {
						found = append(found, fmt.Sprintf("%s differs:\n%s\nbuildssa:\n%s", fn, a, b))
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			diffs = append(diffs, found...)
			packagesSeen++
			funcsSeen += len(ourFuncs)
			noReturnSeen += never
			return nil, nil
		},
	}
	if _, err := analysischecker.Analyze([]*analysis.Analyzer{compare}, pkgs, nil); err != nil {
		t.Fatal(err)
	}
	for i, d := range diffs {
		if i == 10 {
			t.Errorf("... and %d more", len(diffs)-10)
			break
		}
		t.Error(d)
	}
	t.Logf("%d packages, %d functions, %d that never return", packagesSeen, funcsSeen, noReturnSeen)
	// Enough to mean something: the standard library's packages that the
	// chosen ones import, and the runtime's throw among those never returning.
	if packagesSeen < 150 || noReturnSeen < 100 {
		t.Errorf("compared %d packages and %d functions that never return; want at least 150 and 100", packagesSeen, noReturnSeen)
	}
}

// functionText is fn's SSA as ssa.WriteFunction prints it: its blocks and
// instructions, with the values and callees they name.
func functionText(fn *ssa.Function) string {
	var buf bytes.Buffer
	ssa.WriteFunction(&buf, fn)
	return buf.String()
}
