package rng_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTheREADMEsFirstProgramIsTheCompiledExample: the README's "Using it"
// program is Example_fallBackToCPU's imports and body, as they are, so it
// compiles and runs to the end on a CPU-only host; it never drifts.
func TestTheREADMEsFirstProgramIsTheCompiledExample(t *testing.T) {
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
	want := "```go\n" + imports + "\n\n" + body + "\n```\n"

	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(readme), "## Using it\n\n")
	require.True(t, ok, "the README has a \"## Using it\" section")
	end := strings.Index(after, "\n```\n")
	require.Positive(t, end, "the section starts with a Go block")
	require.Equal(t, want, after[:end+len("\n```\n")],
		"the README's first program is not Example_fallBackToCPU's imports and body: copy them from rng/example_cpu_test.go")
}
