package device_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// declaredIn maps each top-level name of the package's own files to the
// file that declares it. A method is Type.name, but Runtime's is bare.
func declaredIn(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	where := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range parsed.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				name := d.Name.Name
				if d.Recv != nil {
					recv := d.Recv.List[0].Type
					if star, ok := recv.(*ast.StarExpr); ok {
						recv = star.X
					}
					if id, ok := recv.(*ast.Ident); ok && id.Name != "Runtime" {
						name = id.Name + "." + name // the walk writes Runtime's methods bare
					}
				}
				where[name] = f
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						where[s.Name.Name] = f
					case *ast.ValueSpec:
						for _, n := range s.Names {
							where[n.Name] = f
						}
					}
				}
			}
		}
	}
	return where
}

var (
	// codeName is how the walk writes an unexported name of the code:
	// camelCase, a method of bringup, or one of the one-word names it uses.
	codeName = regexp.MustCompile(`\b(?:bringup\.[a-z]\w*|[a-z]+[A-Z]\w*|initialize|failure)\b`)
	// placed is a code name or a doc link followed by the file it is in:
	// "x (f.go", "x, f.go" or "[X] (f.go".
	placed = regexp.MustCompile(
		`(?:\[([A-Z][\w.]*)\]|\b(bringup\.[a-z]\w*|[a-z]+[A-Z]\w*|initialize|failure))(?: \(|, )([a-z_]+\.go)\b`)
	// docLink is a doc link to a name of this package: [Open], [Runtime.Init].
	docLink  = regexp.MustCompile(`\[([A-Z]\w*(?:\.\w+)?)\]`)
	fileName = regexp.MustCompile(`\b[a-z_]+\.go\b`)
)

// declared is the key of where for a name as the doc writes it: Runtime's
// methods are bare there.
func declared(name string) string { return strings.TrimPrefix(name, "Runtime.") }

// TestTheWalkNamesWhatIsThere: the package doc's "How a device comes up"
// names only functions the package declares, each in the file it gives, and
// every file of the package. A rename, a move or a new file fails it until
// the walk follows.
func TestTheWalkNamesWhatIsThere(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	_, walk, found := strings.Cut(string(src), "// # How a device comes up")
	require.True(t, found, "doc.go has the section")
	text := strings.Join(strings.Fields(strings.ReplaceAll(walk, "//", " ")), " ")
	where := declaredIn(t)

	for _, name := range codeName.FindAllString(text, -1) {
		if fileName.MatchString(name) {
			continue // bringup.go
		}
		_, ok := where[name]
		assert.True(t, ok, "the walk names %s, which the package does not declare", name)
	}
	for _, link := range docLink.FindAllStringSubmatch(text, -1) {
		_, ok := where[declared(link[1])]
		assert.True(t, ok, "the walk links [%s], which the package does not declare", link[1])
	}
	pairs := placed.FindAllStringSubmatch(text, -1)
	assert.GreaterOrEqual(t, len(pairs), 12, "the walk places its steps in files")
	for _, p := range pairs {
		name, file := declared(p[1]+p[2]), p[3]
		if fileName.MatchString(name) {
			continue // "bringup.go, preflight.go": a list of files
		}
		assert.Equal(t, file, where[name], "the walk says %s is in %s", name, file)
	}
	named := map[string]bool{}
	for _, f := range fileName.FindAllString(text, -1) {
		named[f] = true
		_, err := os.Stat(f)
		assert.NoError(t, err, "the walk names %s", f)
	}
	files := map[string]bool{}
	for _, f := range where {
		files[f] = true
	}
	for f := range files {
		assert.True(t, named[f] || f == "doc.go", "the walk names every file of the package, not %s", f)
	}
}
