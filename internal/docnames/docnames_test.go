package docnames

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the repository's root, from this package's folder.
const root = "../.."

// qualifiers are the names the docs write before a package's names, and
// the folder of that package; rt and gens are the docs' usual variables,
// of the type named after the folder.
var qualifiers = map[string]struct{ dir, typ string }{
	"device": {"device", ""}, "driver": {"device/driver", ""}, "health": {"device/health", ""},
	"sim": {"device/sim", ""}, "cuda": {"device/cuda", ""}, "hip": {"device/hip", ""},
	"backends": {"device/backends", ""}, "devicetest": {"device/devicetest", ""},
	"rng": {"rng", ""}, "philox": {"rng/philox", ""}, "lazy": {"lazy", ""},
	"drahealth": {"dra/drahealth", ""}, "healthwatch": {"device/driver/healthwatch", ""},
	"rt": {"device", "Runtime"}, "gens": {"rng", "Generators"},
}

// gone are names CHANGES.md names as removed, beyond the first column of
// its table of removed names: they must not exist.
var gone = []string{"device.Backend", "device.Capability", "device.MinDriverVersion",
	"device.RegisterUnavailable(name, why)", "driver.Registration.Package"}

// stillThere are names in the table's first column that exist: the row
// removes a use of them, not the name.
var stillThere = map[string]string{
	"gens.Close()": "the row removes closing rt, gens and h in order: Shutdown closes gens",
}

// reference matches a qualified name and what follows it: rt.Stats().Lost,
// device.DefaultRegistry.Known, [device.Runtime.LazyCall].
var reference = regexp.MustCompile(`\b(` + strings.Join(slices.Sorted(func(yield func(string) bool) {
	for q := range qualifiers {
		if !yield(q) {
			return
		}
	}
}), "|") + `)((?:\.[A-Z][A-Za-z0-9_]*(?:\([^()]*\))?)+)`)

// arguments are a call's, which check leaves out.
var arguments = regexp.MustCompile(`\([^()]*\)`)

// pkg is what one package declares: each top-level name with the type it
// is of or returns ("" where that is no named type of the package's), and
// each type's members the same way. An opaque type (an alias, or one that
// embeds a type) may have members this does not see.
type pkg struct {
	top     map[string]string
	members map[string]map[string]string
	opaque  map[string]bool
}

// typeName is the name of e where it is a type of the package itself.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.UnaryExpr:
		return typeName(e.X)
	case *ast.CompositeLit:
		return typeName(e.Type)
	case *ast.IndexExpr:
		return typeName(e.X)
	}
	return ""
}

// result is the type a function returns first.
func result(f *ast.FuncType) string {
	if f.Results == nil || len(f.Results.List) == 0 {
		return ""
	}
	return typeName(f.Results.List[0].Type)
}

// load reads the declarations of the package in dir, every file but the
// tests, whatever its build constraints.
func load(t *testing.T, dir string) pkg {
	t.Helper()
	p := pkg{top: map[string]string{}, members: map[string]map[string]string{}, opaque: map[string]bool{}}
	member := func(typ, name, of string) {
		if p.members[typ] == nil {
			p.members[typ] = map[string]string{}
		}
		p.members[typ][name] = of
	}
	files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files, dir)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					p.top[d.Name.Name] = result(d.Type)
				} else {
					member(typeName(d.Recv.List[0].Type), d.Name.Name, result(d.Type))
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						p.top[s.Name.Name] = s.Name.Name
						if s.Assign != 0 {
							p.opaque[s.Name.Name] = true
						}
						declareMembers(s, member, p.opaque)
					case *ast.ValueSpec:
						for i, n := range s.Names {
							of := typeName(s.Type)
							if of == "" && i < len(s.Values) {
								of = typeName(s.Values[i])
							}
							p.top[n.Name] = of
						}
					}
				}
			}
		}
	}
	return p
}

// declareMembers declares a struct's fields and an interface's methods.
func declareMembers(s *ast.TypeSpec, member func(typ, name, of string), opaque map[string]bool) {
	var fields []*ast.Field
	switch t := s.Type.(type) {
	case *ast.StructType:
		fields = t.Fields.List
	case *ast.InterfaceType:
		fields = t.Methods.List
	}
	for _, f := range fields {
		if len(f.Names) == 0 { // embedded: its members are the type's too
			opaque[s.Name.Name] = true
			if n := typeName(f.Type); n != "" {
				member(s.Name.Name, n, n)
			}
			continue
		}
		of := typeName(f.Type)
		if ft, ok := f.Type.(*ast.FuncType); ok {
			of = result(ft)
		}
		for _, n := range f.Names {
			member(s.Name.Name, n.Name, of)
		}
	}
}

// packages loads each qualifier's package once.
func packages(t *testing.T) map[string]pkg {
	t.Helper()
	out := map[string]pkg{}
	for q, where := range qualifiers {
		out[q] = load(t, where.dir)
	}
	return out
}

// check reports what in ref (a reference's match) the code has not: ""
// where it all exists, as far as the types can be followed.
func check(pkgs map[string]pkg, q, chain string) string {
	p, typ := pkgs[q], qualifiers[q].typ
	parts := strings.Split(strings.TrimPrefix(arguments.ReplaceAllString(chain, "()"), "."), ".")
	for i, part := range parts {
		name, _, _ := strings.Cut(part, "(")
		var of string
		var ok bool
		if i == 0 && typ == "" {
			of, ok = p.top[name]
		} else {
			if p.opaque[typ] {
				return ""
			}
			of, ok = p.members[typ][name]
		}
		if !ok {
			return q + "." + strings.Join(parts[:i+1], ".")
		}
		if of == "" {
			return "" // a type outside the package: not followed
		}
		typ = of
	}
	return ""
}

// markdownDocs are the repository's Markdown docs whose Go names and links
// the tests check, by path from the root: README.md, CHANGES.md, docs/*.md
// and dra/README.md.
func markdownDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	out := []string{"README.md", "CHANGES.md", filepath.Join("dra", "README.md")}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		require.NoError(t, err)
		out = append(out, rel)
	}
	return out
}

// docText is the Markdown doc at path without the first column of a table
// of removed names ("| removed | use instead |"), whose names it returns.
func docText(t *testing.T, path string) (text string, removed []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, path))
	require.NoError(t, err)
	var keep []string
	inTable := false
	for _, line := range strings.Split(string(data), "\n") {
		if line == "| removed | use instead |" {
			inTable = true
			continue
		}
		if inTable && strings.HasPrefix(line, "| ") {
			cells := strings.SplitN(line, " | ", 2)
			removed = append(removed, reference.FindAllString(cells[0], -1)...)
			line = "| " + cells[len(cells)-1]
		} else {
			inTable = false
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n"), removed
}

// comments are the comments of every Go file of the root module's packages,
// tests aside, by file.
func comments(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir // a nested module, or no package's
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		var b strings.Builder
		for _, g := range f.Comments {
			b.WriteString(g.Text())
		}
		out[path] = b.String()
		return nil
	})
	require.NoError(t, err)
	return out
}

func TestTheNamesTheDocsGiveExist(t *testing.T) {
	pkgs := packages(t)
	missing := func(text string) []string {
		var out []string
		for _, m := range reference.FindAllStringSubmatch(text, -1) {
			if bad := check(pkgs, m[1], m[2]); bad != "" && !slices.Contains(out, bad) && !slices.Contains(gone, m[0]) {
				out = append(out, bad)
			}
		}
		return out
	}
	var removed []string
	for _, path := range markdownDocs(t) {
		text, gone := docText(t, path)
		removed = append(removed, gone...)
		assert.Empty(t, missing(text), "%s names these, which the code has not", path)
	}
	require.NotEmpty(t, removed, "CHANGES.md has its table of removed names")
	for path, text := range comments(t) {
		assert.Empty(t, missing(text), "%s's comments name these, which the code has not", path)
	}
	for _, name := range append(removed, gone...) {
		if stillThere[name] != "" {
			continue
		}
		m := reference.FindStringSubmatch(name)
		require.NotNil(t, m, name)
		assert.NotEmpty(t, check(pkgs, m[1], m[2]), "CHANGES.md says %s was removed, but the code has it", name)
	}
}

// TestTheCheckFindsAMissingName: the check is shown to catch a name that is
// not there, a member of a type a method returns, and one through a variable.
func TestTheCheckFindsAMissingName(t *testing.T) {
	pkgs := packages(t)
	for _, tc := range []struct{ ref, missing string }{
		{"device.Open", ""},
		{"device.NoUsableGPU(err)", "device.NoUsableGPU()"},
		{"rt.Stats().FailedCalls", ""},
		{"rt.FailedCalls()", "rt.FailedCalls()"},
		{"rt.Stats().NoSuchField", "rt.Stats().NoSuchField"},
		{"rt.UsePreflight(device.Preflight{Deadline: d})", ""},
		{"device.DefaultRegistry.Known", ""},
		{"device.DefaultRegistry.Nope", "device.DefaultRegistry.Nope"},
		{"[device.Runtime.LazyCall]", ""},
		{"gens.GenerateOnHost", ""},
	} {
		m := reference.FindStringSubmatch(tc.ref)
		require.NotNil(t, m, tc.ref)
		assert.Equal(t, tc.missing, check(pkgs, m[1], m[2]), tc.ref)
	}
}

// ownLink matches a doc link to a name of the comment's own package, and
// the members written after it: [Runtime.Memory], [Stats].PassedOver,
// [*InitError].
var ownLink = regexp.MustCompile(`\[\*?([A-Z][A-Za-z0-9_]*(?:\.[A-Z][A-Za-z0-9_]*)*)\]((?:\.[A-Z][A-Za-z0-9_]*)*)`)

// TestTheDocLinksToTheirOwnPackageExist: a doc comment's links to names of
// its own package ([Runtime.Memory], [Stats].PassedOver) are names the
// package has, in every package the docs name with a qualifier.
func TestTheDocLinksToTheirOwnPackageExist(t *testing.T) {
	pkgs := packages(t)
	byDir := map[string]string{}
	for q, where := range qualifiers {
		if where.typ == "" {
			byDir[filepath.Join(root, where.dir)] = q
		}
	}
	for path, text := range comments(t) {
		q, ok := byDir[filepath.Dir(path)]
		if !ok {
			continue
		}
		var missing []string
		for _, m := range ownLink.FindAllStringSubmatch(text, -1) {
			if bad := check(pkgs, q, "."+m[1]+m[2]); bad != "" && !slices.Contains(missing, bad) {
				missing = append(missing, bad)
			}
		}
		assert.Empty(t, missing, "%s's doc links name these, which package %s has not", path, q)
	}
}

// TestTheOwnLinkCheckFindsAMissingName: the check is shown to catch a link
// to a name, or a member after it, that is not there.
func TestTheOwnLinkCheckFindsAMissingName(t *testing.T) {
	pkgs := packages(t)
	for _, tc := range []struct{ q, text, missing string }{
		{"device", "[Runtime.Memory]", ""},
		{"device", "[Stats].PassedOver", ""},
		{"device", "[Stats].PassedOverX", "device.Stats.PassedOverX"},
		{"device", "[Runtime.Nope]", "device.Runtime.Nope"},
		{"lazy", "[*InitError]", ""},
		{"lazy", "[*InitErr]", "lazy.InitErr"},
		{"health", "[Health.Mount]", ""},
	} {
		m := ownLink.FindStringSubmatch(tc.text)
		require.NotNil(t, m, tc.text)
		assert.Equal(t, tc.missing, check(pkgs, tc.q, "."+m[1]+m[2]), tc.text)
	}
}
