package lockedcall

import (
	"go/token"
	"go/types"

	"golang.org/x/tools/go/ssa"
)

// An exported package variable of a package that others can import is its
// API: an importer may store anything there. Where the package itself
// stores in it only once, in its initializer, and stores its own code
// there, the variable holds that code until an importer assigns it:
//
//	var Library = String("APP_LIBRARY") // String returns a closure over os.Getenv
//
// The package does not report its calls of such a variable under its
// locks. It leaves an obligation on the variable instead (obligation.go),
// as an internal package does on its exported API: each package that
// assigns it, of the module or a user's, is checked where it stores
// (checkStore), and a store of code from outside is reported there; the
// module's own code that locks the held mutex again is a proven re-entry.
// The module's other packages treat the variable as its package's own code
// (a VisibleHook fact) unless they, or a package of the module they import,
// store code from outside in it (an OutsideHooks fact).

// initOnlyVars returns the package's exported package variables of
// function type that the package stores in only in its initializer, its own
// visible code, and whose address it never hands out, in name order: the
// variables whose calls it defers to their importers' stores. None unless
// the package is importable, not internal (whose exported hooks are judged
// as module hooks, see moduleHook), and facts are exported. Variables of
// interface type (io.Discard, os.Interrupt, context.DeadlineExceeded) are
// left out: their methods are called only under -interfaces, and the
// deferral's work would run for every package that has one, in every go
// vet run over it as a dependency.
func (c *checker) initOnlyVars() []*ssa.Global {
	if c.initOnly != nil {
		return *c.initOnly
	}
	var out []*ssa.Global
	c.initOnly = &out
	path := c.pass.Pkg.Path()
	if !summaryFacts || unimportable(c.pass.Pkg) || isInternal(path) {
		return out
	}
	init := c.form.pkg.Func("init")
	members := c.form.pkg.Members
	for _, name := range sortedKeys(members) {
		g, ok := members[name].(*ssa.Global)
		if !ok || !token.IsExported(name) || g.Object() == nil || !isFuncType(g.Type().(*types.Pointer).Elem()) {
			continue
		}
		ix := c.index()
		stores := ix.globalStores[g]
		if ix.escaped[g] || len(stores) != 1 || stores[0].ctx.fn != init {
			continue
		}
		if c.isVisibleCode(stores[0].v, stores[0].ctx, 0) {
			out = append(out, g)
		}
	}
	return out
}

// isInitOnly reports whether obj is one of initOnlyVars.
func (c *checker) isInitOnly(obj types.Object) bool {
	for _, g := range c.initOnlyVars() {
		if g.Object() == obj {
			return true
		}
	}
	return false
}

// defersVars reports whether the package leaves obligations on variables of
// initOnlyVars.
func (c *checker) defersVars() bool {
	return len(c.initOnlyVars()) > 0
}

// deferrable reports whether a finding whose value comes from src can be
// left to the package's callers: in an internal package, any way in; in
// another, only variables of initOnlyVars.
func (c *checker) deferrable(src sourced) bool {
	if !src.ok {
		return false
	}
	if c.deferring() {
		return true
	}
	for _, e := range src.entries {
		if !c.isInitOnly(e.obj) {
			return false
		}
	}
	return len(src.entries) > 0
}

// moduleVar reports whether obj is an exported package variable of another
// package of the module that others can import and that is not internal:
// its VisibleHook fact, exported for a variable of initOnlyVars, says
// whether it holds its package's own code.
func (c *checker) moduleVar(obj types.Object) bool {
	v, ok := obj.(*types.Var)
	pkg := obj.Pkg()
	if !ok || v.IsField() || pkg == nil || pkg == c.pass.Pkg || pkg.Scope().Lookup(v.Name()) != v {
		return false
	}
	return !unimportable(pkg) && !isInternal(pkg.Path()) && c.sameModule(pkg.Path())
}

// exportInitOnlyHooks exports a VisibleHook fact for each variable of
// initOnlyVars, with the indexes of its function-typed results that are
// visible code too.
func (c *checker) exportInitOnlyHooks() {
	for _, g := range c.initOnlyVars() {
		fact := VisibleHook{}
		var fn *ssa.Function
		switch v := c.index().globalStores[g][0].v.(type) {
		case *ssa.Function:
			fn = v
		case *ssa.MakeClosure:
			fn = v.Fn.(*ssa.Function)
		}
		if sig, ok := g.Type().(*types.Pointer).Elem().Underlying().(*types.Signature); ok && fn != nil {
			for i := range sig.Results().Len() {
				if holdsCode(sig.Results().At(i).Type()) && c.resultVisible(fn, i) {
					fact.Results = append(fact.Results, i)
				}
			}
		}
		c.pass.ExportObjectFact(g.Object(), &fact)
	}
}

// isFuncType reports whether t is a function type.
func isFuncType(t types.Type) bool {
	_, ok := t.Underlying().(*types.Signature)
	return ok
}
