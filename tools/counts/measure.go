package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// figure is one measurement.
type figure struct{ name, value string }

// measure takes every figure of the checkout at root.
func measure(root string) ([]figure, error) {
	device, err := parsePackage(filepath.Join(root, "device"))
	if err != nil {
		return nil, err
	}
	drv, err := parsePackage(filepath.Join(root, "device", "driver"))
	if err != nil {
		return nil, err
	}
	internals, err := internalPackages(root)
	if err != nil {
		return nil, err
	}
	errTypes, err := errorTypes(root)
	if err != nil {
		return nil, err
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		return nil, err
	}
	lines, words, sentences := prose(string(readme))
	deviceFiles, err := sourceFiles(filepath.Join(root, "device"))
	if err != nil {
		return nil, err
	}
	return []figure{
		{"device exported names", fmt.Sprint(len(exportedNames(device)))},
		{"device source files", fmt.Sprint(len(deviceFiles))},
		{"Runtime methods", fmt.Sprint(len(methods(device, "Runtime")))},
		{"device/driver exported names", fmt.Sprint(len(exportedNames(drv)))},
		{"Stats exported fields", fmt.Sprint(fields(device, "Stats"))},
		{"internal packages", fmt.Sprint(len(internals))},
		{"internal packages (list)", strings.Join(internals, " ")},
		{"error types", fmt.Sprint(len(errTypes))},
		{"error types (list)", strings.Join(errTypes, " ")},
		{"README lines", fmt.Sprint(lines)},
		{"README words per sentence", fmt.Sprintf("%.1f", float64(words)/float64(max(sentences, 1)))},
	}, nil
}

// sourceFiles lists the non-test Go files of the package in dir.
func sourceFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			files = append(files, n)
		}
	}
	return files, nil
}

// parsePackage parses the non-test files of the package in dir.
func parsePackage(dir string) ([]*ast.File, error) {
	names, err := sourceFiles(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// exportedNames are the package-level exported names: types, functions,
// variables and constants.
func exportedNames(files []*ast.File) []string {
	var names []string
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// methods are the exported methods of the named type.
func methods(files []*ast.File, typ string) []string {
	var names []string
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() {
				continue
			}
			if receiverName(fd.Recv.List[0].Type) == typ {
				names = append(names, fd.Name.Name)
			}
		}
	}
	return names
}

func receiverName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverName(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.IndexExpr:
		return receiverName(e.X)
	}
	return ""
}

// fields counts the named struct type's exported fields, each name of a
// list one, and each embedded field.
func fields(files []*ast.File, typ string) int {
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range gd.Specs {
				ts, ok := s.(*ast.TypeSpec)
				if !ok || ts.Name.Name != typ {
					continue
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return 0
				}
				n := 0 // the exported fields: what a caller reads
				for _, f := range st.Fields.List {
					if len(f.Names) == 0 {
						n++ // embedded
					}
					for _, name := range f.Names {
						if name.IsExported() {
							n++
						}
					}
				}
				return n
			}
		}
	}
	return 0
}

// internalPackages lists the packages under an internal/ folder of the root
// module, outside the nested modules, by their path from root.
func internalPackages(root string) ([]string, error) {
	var pkgs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || isModule(path)) {
			return filepath.SkipDir
		}
		if !slices.Contains(strings.Split(rel, string(filepath.Separator)), "internal") {
			return nil
		}
		if files, _ := sourceFiles(path); len(files) > 0 {
			pkgs = append(pkgs, filepath.ToSlash(rel))
		}
		return nil
	})
	return pkgs, err
}

// isModule reports whether dir holds a go.mod: a nested module.
func isModule(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

// errorTypes lists the types with an Error() string method in device and
// the packages under it, as package.Type.
func errorTypes(root string) ([]string, error) {
	var types []string
	err := filepath.WalkDir(filepath.Join(root, "device"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" || isModule(path) {
			return filepath.SkipDir
		}
		files, err := parsePackage(path)
		if err != nil {
			return err
		}
		for _, f := range files {
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if ok && fd.Recv != nil && fd.Name.Name == "Error" && fd.Type.Params.NumFields() == 0 &&
					fd.Type.Results.NumFields() == 1 {
					types = append(types, f.Name.Name+"."+receiverName(fd.Recv.List[0].Type))
				}
			}
		}
		return nil
	})
	slices.Sort(types)
	return slices.Compact(types), err
}

var sentenceEnd = regexp.MustCompile(`[.!?](\s|$)`)

// prose counts text's lines, and the words and sentences of its prose:
// outside code blocks, tables and headings.
func prose(text string) (lines, words, sentences int) {
	inCode := false
	var para []string
	flush := func() {
		p := strings.Join(para, " ")
		para = nil
		if strings.TrimSpace(p) == "" {
			return
		}
		words += len(strings.Fields(p))
		sentences += max(len(sentenceEnd.FindAllStringIndex(p, -1)), 1)
	}
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		lines++
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "```"):
			inCode = !inCode
			flush()
		case inCode, strings.HasPrefix(t, "|"), strings.HasPrefix(t, "#"), strings.HasPrefix(l, "    "):
			flush()
		case t == "":
			flush()
		default:
			para = append(para, strings.TrimPrefix(strings.TrimPrefix(t, "- "), "* "))
		}
	}
	flush()
	return lines, words, sentences
}
