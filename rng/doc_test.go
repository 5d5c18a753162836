package rng_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/internal/docnames"
	"github.com/stretchr/testify/require"
)

// TestThePackageDocsProgramIsTheCompiledExample: the program in the package
// doc's section "Falling back to the CPU" is Example_fallBackToCPU's imports
// and body, as they are, so it compiles and runs to the end on a CPU-only
// host; it never drifts.
func TestThePackageDocsProgramIsTheCompiledExample(t *testing.T) {
	src, err := os.ReadFile("example_cpu_test.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_cpu_test.go", src, 0)
	require.NoError(t, err)
	var imports, body string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			if d.Tok == token.IMPORT {
				imports = string(src[fset.Position(d.Pos()).Offset:fset.Position(d.End()).Offset])
			}
		case *ast.FuncDecl:
			if d.Name.Name == "Example_fallBackToCPU" {
				inner := string(src[fset.Position(d.Body.Lbrace).Offset+2 : fset.Position(d.Body.Rbrace).Offset])
				inner = inner[:strings.Index(inner, "\t// Output:")]
				var lines []string
				for _, l := range strings.Split(strings.TrimRight(inner, "\n"), "\n") {
					lines = append(lines, strings.TrimPrefix(l, "\t"))
				}
				body = strings.Join(lines, "\n")
			}
		}
	}
	require.NotEmpty(t, body)
	want := imports + "\n\n" + body + "\n"

	doc, err := docnames.PackageDoc("doc.go")
	require.NoError(t, err)
	_, section, ok := strings.Cut(doc, "\n# Falling back to the CPU\n")
	require.True(t, ok, "the package doc has a section \"Falling back to the CPU\"")
	program, err := docnames.CodeAfter(section, "\n")
	require.NoError(t, err, "the section shows a program")
	require.Equal(t, want, program,
		"the package doc's program is not Example_fallBackToCPU's imports and body: copy them from rng/example_cpu_test.go")
}
