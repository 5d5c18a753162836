package lockedcall

import (
	"go/token"
	"go/types"

	"golang.org/x/tools/go/ssa"
)

// Only its module can call the exported API of an internal package, and the
// package is analyzed before the module's packages that call it, so it cannot
// see what they pass. A function value that such a package calls under a lock,
// and that can only have come in through that API, is not reported there:
// sources traces it to its ways in (entries), and the package leaves an
// obligation on each (obligation.go), which the packages that call the API
// check (obligcheck.go).

// entry is one way into a package through its exported API: a parameter of
// an exported function or method, or an exported field or package variable.
type entry struct {
	obj   types.Object // a *types.Func, or the *types.Var of a field or package variable
	param int          // the function's parameter (0 is a method's receiver); -1 for a variable
}

// sourced is what sources found: the entries a value may come from. ok is
// false when it may also come from anywhere else.
type sourced struct {
	entries []entry
	ok      bool
}

// notSourced is the answer for a value that may come from anywhere.
var notSourced = sourced{}

// join is what a value may hold that may be either s or t.
func (s sourced) join(t sourced) sourced {
	if !s.ok || !t.ok {
		return notSourced
	}
	for _, e := range t.entries {
		if !s.has(e) {
			if len(s.entries) >= maxOutCalls {
				return notSourced // too many ways in to carry: report where it is called
			}
			s.entries = append(s.entries[:len(s.entries):len(s.entries)], e)
		}
	}
	return s
}

func (s sourced) has(e entry) bool {
	for _, x := range s.entries {
		if x == e {
			return true
		}
	}
	return false
}

// sourceKey names a memoized answer of sources: a parameter, a result, a
// field or a package variable.
type sourceKey struct {
	fn  *ssa.Function
	i   int
	obj types.Object
}

// sources says where the function value v, seen from ctx, can come from: the
// package's own visible code (ok, no entries), or that and the package's
// exported API (the entries). It is asked in internal packages, and of the
// findings of packages with initOnlyVars.
func (c *checker) sources(v ssa.Value, ctx *funcCtx) sourced {
	return c.sourcesDepth(v, ctx, map[ssa.Value]bool{}, 0)
}

func (c *checker) sourcesDepth(v ssa.Value, ctx *funcCtx, seen map[ssa.Value]bool, depth int) sourced {
	if depth > maxPathDepth {
		return notSourced
	}
	if seen[v] {
		return sourced{ok: true} // a cycle adds nothing
	}
	seen[v] = true
	if c.isVisibleCode(v, ctx, 0) {
		return sourced{ok: true}
	}
	next := func(v ssa.Value, ctx *funcCtx) sourced { return c.sourcesDepth(v, ctx, seen, depth+1) }
	switch v := v.(type) {
	case *ssa.MakeClosure:
		return c.closureSources(closureRef{fn: v.Fn.(*ssa.Function), bindings: v.Bindings, ctx: ctx}, depth)
	case *ssa.Function:
		if v.Parent() != nil {
			return c.closureSources(closureRef{fn: v, ctx: ctx}, depth)
		}
	case *ssa.Parameter:
		i := paramIndex(ctx.fn, v)
		switch {
		case i < 0:
		case ctx.caller != nil:
			return next(ctx.args[i], ctx.caller)
		case ctx.fn.Parent() != nil:
			if arg := onlyCallArg(ctx.fn, i); arg != nil {
				parent := ctx.parent
				if parent == nil {
					parent = c.standaloneCtx(ctx.fn.Parent())
				}
				return next(arg, parent)
			}
			return c.closureParamSources(ctx.fn, i)
		default:
			return c.paramSources(ctx.fn, i)
		}
	case *ssa.FreeVar:
		if i := freeVarIndex(ctx.fn, v); i >= 0 && ctx.parent != nil {
			return next(ctx.bindings[i], ctx.parent)
		}
	case *ssa.UnOp:
		if v.Op == token.MUL {
			return c.loadSources(v.X, ctx, seen, depth+1)
		}
	case *ssa.Field:
		return c.fieldSources(fieldVar(v.X.Type(), v.Field))
	case *ssa.Call:
		return c.resultSources(v, 0)
	case *ssa.Extract:
		switch t := v.Tuple.(type) {
		case *ssa.Call:
			return c.resultSources(t, v.Index)
		case *ssa.TypeAssert:
			return next(t.X, ctx)
		}
	case *ssa.Phi:
		out := sourced{ok: true}
		for i, e := range v.Edges {
			if !nilOnEdge(v, i) {
				if out = out.join(next(e, ctx)); !out.ok {
					break
				}
			}
		}
		return out
	case *ssa.TypeAssert:
		return next(v.X, ctx)
	case *ssa.MakeInterface:
		return next(v.X, ctx)
	case *ssa.ChangeType:
		return next(v.X, ctx)
	case *ssa.Convert:
		return next(v.X, ctx)
	case *ssa.ChangeInterface:
		return next(v.X, ctx)
	}
	return notSourced
}

// loadSources is sources for a value loaded from addr.
func (c *checker) loadSources(addr ssa.Value, ctx *funcCtx, seen map[ssa.Value]bool, depth int) sourced {
	switch a := addr.(type) {
	case *ssa.Global:
		return c.globalSources(a)
	case *ssa.FieldAddr:
		return c.fieldSources(fieldVar(a.X.Type(), a.Field))
	case *ssa.Alloc:
		out := sourced{ok: true}
		for _, stored := range allocStores(a) {
			out = out.join(c.sourcesDepth(stored, ctx, seen, depth+1))
		}
		return out
	case *ssa.FreeVar:
		if i := freeVarIndex(ctx.fn, a); i >= 0 && ctx.parent != nil {
			return c.loadSources(ctx.bindings[i], ctx.parent, seen, depth+1)
		}
	case *ssa.Parameter:
		if i := paramIndex(ctx.fn, a); i >= 0 && ctx.caller != nil {
			return c.loadSources(ctx.args[i], ctx.caller, seen, depth+1)
		}
	case *ssa.Call:
		return c.atomicSources(a)
	}
	return notSourced
}

// memoSources memoizes an answer of sources; a question that depends on
// itself adds nothing while it is being answered (as verdict).
func (c *checker) memoSources(key sourceKey, answer func() sourced) sourced {
	if s, ok := c.sourceMemo[key]; ok {
		return s
	}
	if c.sourceBusy[key] {
		c.sourceAssumed++
		return sourced{ok: true}
	}
	c.sourceBusy[key] = true
	assumedBefore := c.sourceAssumed
	s := answer()
	delete(c.sourceBusy, key)
	if !s.ok || c.sourceAssumed == assumedBefore || len(c.sourceBusy) == 0 {
		c.sourceMemo[key] = s
	}
	return s
}

// paramSources is sources for parameter i of a top-level function of the
// package: an entry if the function is exported (and reached only where its
// callers see its facts), and what the package itself passes there, in
// static calls and in interface method calls that may run it (its tests').
func (c *checker) paramSources(fn *ssa.Function, i int) sourced {
	if origin := fn.Origin(); origin != nil {
		fn = origin
	}
	obj, ok := fn.Object().(*types.Func)
	if !ok || !c.srcFuncs[fn] || obj.Pkg() != c.pass.Pkg {
		return notSourced
	}
	return c.memoSources(sourceKey{fn: fn, i: i}, func() sourced {
		ix := c.index()
		if ix.escaped[fn] || ix.escaped[obj] {
			return notSourced // called where the arguments are not seen
		}
		sites := ix.callSites[fn]
		if obj.Signature().Recv() != nil {
			for _, site := range ix.invokeSites[obj.Name()] {
				if len(site.args) == len(fn.Params)-1 {
					site.args = append([]ssa.Value{nil}, site.args...) // the receiver
					sites = append(sites[:len(sites):len(sites)], site)
				}
			}
		}
		out := sourced{ok: true}
		switch {
		case obj.Exported() && c.enterable(obj, i):
			out.entries = []entry{{obj: obj, param: i}}
		case obj.Exported() || len(sites) == 0:
			return notSourced
		}
		for _, site := range sites {
			if i >= len(site.args) || site.args[i] == nil {
				return notSourced
			}
			if out = out.join(c.sources(site.args[i], site.ctx)); !out.ok {
				return out
			}
		}
		return out
	})
}

// fieldSources is sources for a field of one of the package's types: an
// entry if it is exported, and what the package itself stores in it.
func (c *checker) fieldSources(f *types.Var) sourced {
	if f == nil || f.Pkg() != c.pass.Pkg {
		return notSourced
	}
	ix := c.index()
	return c.storedSources(f, ix.escaped[f], ix.fieldStores[f])
}

// globalSources is fieldSources for a package variable.
func (c *checker) globalSources(g *ssa.Global) sourced {
	obj := g.Object()
	if obj == nil || obj.Pkg() != c.pass.Pkg {
		return notSourced
	}
	ix := c.index()
	return c.storedSources(obj, ix.escaped[g], ix.globalStores[g])
}

func (c *checker) storedSources(obj types.Object, escaped bool, stores []storedValue) sourced {
	if escaped {
		return notSourced // written where the index does not see
	}
	return c.memoSources(sourceKey{obj: obj}, func() sourced {
		out := sourced{ok: true}
		if obj.Exported() {
			out.entries = []entry{{obj: obj, param: -1}}
		}
		for _, s := range stores {
			if out = out.join(c.sources(s.v, s.ctx)); !out.ok {
				return out
			}
		}
		return out
	})
}

// resultSources is sources for result i of a static call of a function of the
// package: what it returns (a getter of a variable that its exported setter
// fills). sourcesDepth has already asked whether the result is visible.
func (c *checker) resultSources(call *ssa.Call, i int) sourced {
	fn := call.Call.StaticCallee()
	if fn == nil {
		return notSourced
	}
	if origin := fn.Origin(); origin != nil {
		fn = origin
	}
	if !c.srcFuncs[fn] || fn.Parent() != nil {
		return notSourced
	}
	return c.memoSources(sourceKey{fn: fn, i: -1 - i}, func() sourced {
		ctx := &funcCtx{fn: fn}
		out := sourced{ok: true}
		returns := 0
		for _, b := range fn.Blocks {
			ret, ok := b.Instrs[len(b.Instrs)-1].(*ssa.Return)
			if !ok || i >= len(ret.Results) {
				continue
			}
			returns++
			if out = out.join(c.sources(ret.Results[i], ctx)); !out.ok {
				return out
			}
		}
		if returns == 0 {
			return notSourced
		}
		return out
	})
}

// closureSources is sources for a closure that calls code from outside: the
// sources of what it calls (a closure that counts down and then calls the
// onDone it captured comes from where onDone comes from).
func (c *checker) closureSources(ref closureRef, depth int) sourced {
	if depth > maxClosureDepth {
		return notSourced
	}
	ctx := &funcCtx{fn: ref.fn, parent: ref.ctx, bindings: ref.bindings}
	out := sourced{ok: true}
	for _, b := range ref.fn.Blocks {
		for _, instr := range b.Instrs {
			call, ok := instr.(ssa.CallInstruction)
			if _, isGo := instr.(*ssa.Go); !ok || isGo {
				continue
			}
			common := call.Common()
			switch op, _ := lockOpOf(common); {
			case rangeYield(common) != nil, common.IsInvoke() && c.interfaces:
				return notSourced
			case op != notLockOp, common.IsInvoke(), staticTopLevel(common) != nil:
				continue
			}
			if out = out.join(c.sourcesDepth(common.Value, ctx, map[ssa.Value]bool{}, depth+1)); !out.ok {
				return out
			}
		}
	}
	return out
}
