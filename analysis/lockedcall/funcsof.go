package lockedcall

import (
	"go/token"
	"go/types"

	"golang.org/x/tools/go/ssa"
)

// maxFuncsOf bounds how far funcsOf follows a function value.
const maxFuncsOf = 8

// funcsOf returns the functions of the module that a function value can
// hold, as far as the package's stores show them: static functions,
// closures and method values, through locals, phis, conversions, captured
// variables, fields and package variables (every store in the package,
// composite literals included), the results of the package's functions,
// and parameters of its functions that only the package calls: unexported
// ones, and exported ones of a package nothing imports (a command), such
// as a constructor's, an option's or a setter's. What it cannot follow it
// leaves out. The set is complete where classify finds the value visible:
// only then is it asked (reentryValue, reentryObligation).
func (c *checker) funcsOf(v ssa.Value, ctx *funcCtx) []*ssa.Function {
	var out []*ssa.Function
	seen := map[ssa.Value]bool{}
	var walk func(v ssa.Value, ctx *funcCtx, depth int)
	walkStores := func(stores []storedValue, depth int) {
		for _, s := range stores {
			walk(s.v, s.ctx, depth+1)
		}
	}
	walk = func(v ssa.Value, ctx *funcCtx, depth int) {
		if depth > maxFuncsOf || seen[v] || len(out) >= maxFuncsOf {
			return
		}
		seen[v] = true
		ix := c.index()
		switch v := v.(type) {
		case *ssa.Function:
			out = append(out, v)
		case *ssa.MakeClosure:
			out = append(out, v.Fn.(*ssa.Function))
		case *ssa.ChangeType:
			walk(v.X, ctx, depth+1)
		case *ssa.Convert:
			walk(v.X, ctx, depth+1)
		case *ssa.MakeInterface:
			walk(v.X, ctx, depth+1)
		case *ssa.ChangeInterface:
			walk(v.X, ctx, depth+1)
		case *ssa.TypeAssert:
			walk(v.X, ctx, depth+1)
		case *ssa.Phi:
			for _, e := range v.Edges {
				walk(e, ctx, depth+1)
			}
		case *ssa.FreeVar:
			if r, rctx := resolveFreeVar(v, ctx); r != v {
				walk(r, rctx, depth+1)
			}
		case *ssa.Parameter:
			i := paramIndex(ctx.fn, v)
			switch {
			case i < 0:
			case ctx.caller != nil:
				walk(ctx.args[i], ctx.caller, depth+1)
			case ctx.fn.Parent() == nil && c.onlyCalledHere(ctx.fn):
				for _, site := range ix.callSites[ctx.fn] {
					if i < len(site.args) {
						walk(site.args[i], site.ctx, depth+1)
					}
				}
			}
		case *ssa.Field:
			if fv := fieldVar(v.X.Type(), v.Field); fv != nil {
				walkStores(ix.fieldStores[fv], depth)
			}
		case *ssa.Call:
			c.walkResults(v, 0, func(r ssa.Value, rctx *funcCtx) { walk(r, rctx, depth+1) })
		case *ssa.Extract:
			if call, ok := v.Tuple.(*ssa.Call); ok {
				c.walkResults(call, v.Index, func(r ssa.Value, rctx *funcCtx) { walk(r, rctx, depth+1) })
			}
		case *ssa.UnOp:
			if v.Op != token.MUL {
				return
			}
			addr, actx := resolveFreeVar(v.X, ctx)
			switch a := addr.(type) {
			case *ssa.Alloc:
				for _, s := range allocStores(a) {
					walk(s, actx, depth+1)
				}
			case *ssa.Global:
				walkStores(ix.globalStores[a], depth)
			case *ssa.FieldAddr:
				if fv := fieldVar(a.X.Type(), a.Field); fv != nil {
					walkStores(ix.fieldStores[fv], depth)
				}
			}
		}
	}
	walk(v, ctx, 0)
	return out
}

// onlyCalledHere reports whether only the package calls the top-level
// function fn, and only directly, so that its call sites in the package are
// all its callers: it is unexported, or exported by a package nothing
// imports, never used as a value, and, for a method, never called through
// an interface (paramHoldsVisible's rule).
func (c *checker) onlyCalledHere(fn *ssa.Function) bool {
	obj, ok := fn.Object().(*types.Func)
	if !ok || !c.srcFuncs[fn] || obj.Exported() && !unimportable(obj.Pkg()) {
		return false
	}
	ix := c.index()
	invoked := obj.Signature().Recv() != nil && ix.invoked[obj.Name()]
	return !ix.escaped[fn] && !ix.escaped[obj] && !invoked
}

// walkResults calls visit with each value that result i of a static call of
// one of the package's functions can return, in that function's context.
func (c *checker) walkResults(call *ssa.Call, i int, visit func(ssa.Value, *funcCtx)) {
	fn := call.Call.StaticCallee()
	if fn == nil {
		return
	}
	if origin := fn.Origin(); origin != nil {
		fn = origin
	}
	if !c.srcFuncs[fn] || fn.Parent() != nil {
		return
	}
	ctx := &funcCtx{fn: fn}
	for _, b := range fn.Blocks {
		if ret, ok := b.Instrs[len(b.Instrs)-1].(*ssa.Return); ok && i < len(ret.Results) {
			visit(ret.Results[i], ctx)
		}
	}
}
