package lockedcall

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/cfg"
	"golang.org/x/tools/go/types/typeutil"
)

// NoReturn is the fact lockedcall exports for a function that never returns
// to its caller: every path through it exits, panics or loops for ever
// (log.Fatal, a helper that panics). In the SSA form of a caller, the block
// that calls it ends there, so that no lock state flows past the call.
// ctrlflow exports the same fact for buildssa; lockedcall computes its own
// so that it needs neither.
type NoReturn struct{}

// AFact marks NoReturn as an analysis fact.
func (*NoReturn) AFact() {}

// String renders the fact as the tests expect it.
func (*NoReturn) String() string { return "noReturn" }

// noReturns returns the functions whose calls the package's SSA form ends
// its blocks at, and exports a NoReturn fact for each of the package's own.
//
// A function of the package never returns when its control-flow graph, in
// which calls of functions that never return end their block, has no
// reachable return. The functions are judged in source order, each callee of
// the package before its caller; in a cycle of calls, a callee still being
// judged counts as returning. That is ctrlflow's order and rule, so the
// answers are its answers. Of other packages' functions, those called as a
// statement count, as in ctrlflow's answers to buildssa: a call in an
// expression (return fatal()) does not end its block.
func noReturns(pass *analysis.Pass) map[*types.Func]bool {
	decls := map[*types.Func]*ast.FuncDecl{}
	var order []*types.Func
	for _, decl := range funcDecls(pass) {
		fn := pass.TypesInfo.Defs[decl.Name].(*types.Func)
		decls[fn] = decl
		order = append(order, fn)
	}
	noReturn := map[*types.Func]bool{}
	started := map[*types.Func]bool{}
	var judge func(fn *types.Func)
	mayReturn := func(call *ast.CallExpr) bool {
		if id, ok := call.Fun.(*ast.Ident); ok && pass.TypesInfo.Uses[id] == panicBuiltin {
			return false
		}
		fn := typeutil.StaticCallee(pass.TypesInfo, call)
		switch {
		case fn == nil:
			return true // a dynamic call may return
		case decls[fn] != nil:
			judge(fn)
			return !noReturn[fn]
		case pass.ImportObjectFact(fn, new(NoReturn)):
			noReturn[fn] = true
			return false
		}
		return true
	}
	judge = func(fn *types.Func) {
		if started[fn] {
			return
		}
		started[fn] = true
		never, known := knownNoReturn(fn)
		if body := decls[fn].Body; !known && body != nil {
			never = cfg.New(body, mayReturn).NoReturn()
		}
		if never {
			noReturn[fn] = true
			pass.ExportObjectFact(fn, new(NoReturn))
		}
	}
	for _, fn := range order {
		judge(fn)
	}
	// ctrlflow asks about the calls in the bodies it builds a graph of: every
	// function literal's, and every declared function's whose answer is not
	// known without it.
	var calls func(n ast.Node) bool
	calls = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if _, known := knownNoReturn(pass.TypesInfo.Defs[n.Name].(*types.Func)); known {
				ast.Inspect(n, literalsOnly(calls))
				return false
			}
		case *ast.ExprStmt:
			if call, ok := n.X.(*ast.CallExpr); ok {
				if fn := typeutil.StaticCallee(pass.TypesInfo, call); fn != nil && decls[fn] == nil && pass.ImportObjectFact(fn, new(NoReturn)) {
					noReturn[fn] = true
				}
			}
		}
		return true
	}
	for _, file := range pass.Files {
		ast.Inspect(file, calls)
	}
	return noReturn
}

// literalsOnly returns an inspector that hands each function literal it
// meets, and only those, to visit.
func literalsOnly(visit func(ast.Node) bool) func(ast.Node) bool {
	return func(n ast.Node) bool {
		if lit, ok := n.(*ast.FuncLit); ok {
			ast.Inspect(lit, visit)
			return false
		}
		return true
	}
}

var panicBuiltin = types.Universe.Lookup("panic")

// knownNoReturn says whether fn is one of the functions whose answer is
// known without their body: the process and goroutine exits, whose bodies are
// assembly or loop on a system call, and the fatal methods of common loggers,
// which end in a call through a hook. internal/abi.EscapeNonString, whose
// body only panics, is known to return: the compiler replaces its calls; so
// is hash/maphash.Comparable, which calls it.
func knownNoReturn(fn *types.Func) (never, known bool) {
	if fn.Pkg() == nil {
		return false, false
	}
	recv := ""
	if r := fn.Signature().Recv(); r != nil {
		t := r.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if named, ok := types.Unalias(t).(*types.Named); ok {
			recv = named.Obj().Name()
		}
	}
	never, known = knownReturns[fn.Pkg().Path()+" "+recv+" "+fn.Name()]
	return never, known
}

// knownReturns maps "package receiver name" (no receiver for a function) to
// whether the function never returns.
var knownReturns = func() map[string]bool {
	m := map[string]bool{
		"internal/abi  EscapeNonString": false,
		"hash/maphash  Comparable":      false,
	}
	never := func(pkg, recv string, names ...string) {
		for _, name := range names {
			m[pkg+" "+recv+" "+name] = true
		}
	}
	never("syscall", "", "Exit", "ExitProcess", "ExitThread")
	never("runtime", "", "Goexit", "fatalthrow", "fatalpanic", "exit")
	never("go.uber.org/zap", "Logger", "Fatal", "Panic")
	never("go.uber.org/zap", "SugaredLogger", "Fatal", "Fatalw", "Fatalf", "Panic", "Panicw", "Panicf")
	never("github.com/sirupsen/logrus", "Logger", "Exit", "Panic", "Panicf", "Panicln")
	never("github.com/sirupsen/logrus", "Entry", "Panicf", "Panicln")
	for _, klog := range []string{"k8s.io/klog", "k8s.io/klog/v2"} {
		never(klog, "", "Exit", "ExitDepth", "Exitf", "Exitln", "Fatal", "FatalDepth", "Fatalf", "Fatalln")
	}
	return m
}()
