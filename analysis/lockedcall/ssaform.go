package lockedcall

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/ssa"
)

// form is one package in SSA form: what buildssa's result holds, built
// without buildssa. buildssa requires ctrlflow, which requires inspect; the
// three cost a vet run about a quarter of lockedcall's time and, for a large
// package, 30 MB of an inspector that nothing here reads. The form is built
// from the same syntax and types, with the same functions known not to
// return, so its functions are buildssa's instruction for instruction
// (TestTheFormIsBuildssas).
type form struct {
	pkg   *ssa.Package
	funcs []*ssa.Function // declared functions and their literals, in source order
}

// buildForm builds the package's SSA form. It exports a NoReturn fact for
// each of the package's functions that never returns.
func buildForm(pass *analysis.Pass) form {
	prog := ssa.NewProgram(pass.Fset, 0)
	noReturn := noReturns(pass)
	prog.SetNoReturn(func(fn *types.Func) bool { return noReturn[fn] })
	for _, imp := range pass.Pkg.Imports() {
		prog.CreatePackage(imp, nil, nil, true)
	}
	pkg := prog.CreatePackage(pass.Pkg, pass.Files, pass.TypesInfo, false)
	pkg.Build()

	var funcs []*ssa.Function
	var add func(fn *ssa.Function)
	add = func(fn *ssa.Function) {
		funcs = append(funcs, fn)
		for _, anon := range fn.AnonFuncs {
			add(anon)
		}
	}
	for _, decl := range funcDecls(pass) {
		add(prog.FuncValue(pass.TypesInfo.Defs[decl.Name].(*types.Func)))
	}
	return form{pkg: pkg, funcs: funcs}
}

// funcDecls returns the package's function and method declarations in
// source order.
func funcDecls(pass *analysis.Pass) []*ast.FuncDecl {
	var decls []*ast.FuncDecl
	for _, file := range pass.Files {
		for _, decl := range file.Decls {
			if decl, ok := decl.(*ast.FuncDecl); ok {
				if _, ok := pass.TypesInfo.Defs[decl.Name].(*types.Func); ok {
					decls = append(decls, decl)
				}
			}
		}
	}
	return decls
}
