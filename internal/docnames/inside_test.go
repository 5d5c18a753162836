package docnames

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// module is the module path that docs/INSIDE.md leaves off each package.
const module = "github.com/gpuinit/gpuinit/"

// TestTheInsideMapListsEveryImport: each row of docs/INSIDE.md's table names
// a package and every package of the module that its own files import (its
// tests aside), no more and no fewer. A new import, or a package split or
// renamed, fails it until the map follows.
func TestTheInsideMapListsEveryImport(t *testing.T) {
	md, err := os.ReadFile(filepath.Join(root, "docs", "INSIDE.md"))
	require.NoError(t, err)
	rows := 0
	for _, line := range strings.Split(string(md), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || strings.TrimSpace(cells[1]) == "package" || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		rows++
		pkg := strings.TrimSpace(cells[1])
		var listed []string
		for _, imp := range strings.Split(cells[2], ",") {
			if imp = strings.TrimSpace(imp); imp != "" {
				listed = append(listed, imp)
			}
		}
		slices.Sort(listed)
		assert.Equal(t, moduleImports(t, pkg), listed, "docs/INSIDE.md's row of %s", pkg)
	}
	assert.GreaterOrEqual(t, rows, 10, "docs/INSIDE.md's table has a row per package")
}

// moduleImports returns the module's packages that pkg's files import, its
// tests aside, sorted, without the module's path.
func moduleImports(t *testing.T, pkg string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, spec := range parsed.Imports {
			path, err := strconv.Unquote(spec.Path.Value)
			require.NoError(t, err)
			if rest, ok := strings.CutPrefix(path, module); ok {
				seen[rest] = true
			}
		}
	}
	require.NotEmpty(t, files, "%s has no Go files", pkg)
	var imports []string
	for p := range seen {
		imports = append(imports, p)
	}
	slices.Sort(imports)
	return imports
}
