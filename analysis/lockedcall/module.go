package lockedcall

import (
	"fmt"
	"go/token"
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/types/objectpath"
)

// resultVisible reports whether result i of fn only ever holds visible code:
// every return gives a static function, a method value, a closure that calls
// nothing from outside, or nil. A stop or close function that a package builds
// and returns is its own code to the caller, in this package or, through
// CallSummary facts, in another.
func (c *checker) resultVisible(fn *ssa.Function, i int) bool {
	if origin := fn.Origin(); origin != nil {
		fn = origin
	}
	if !c.srcFuncs[fn] {
		if fact := c.importedSummary(fn); fact != nil {
			for _, j := range fact.VisibleResults {
				if j == i {
					return true
				}
			}
		}
		return false
	}
	return c.verdict(resultKey{fn, i}, func() bool {
		ctx := &funcCtx{fn: fn}
		returns := 0
		for _, b := range fn.Blocks {
			ret, ok := b.Instrs[len(b.Instrs)-1].(*ssa.Return)
			if !ok || i >= len(ret.Results) {
				continue
			}
			returns++
			if !c.isVisibleCode(ret.Results[i], ctx, 0) {
				return false
			}
		}
		return returns > 0
	})
}

// madeHere reports whether v is an object the package made itself, from
// visible code only: an unexported field or package variable of this package
// whose every store is the result of a static call (a constructor) given no
// code from outside. What the object's methods call through its own fields is
// then what the package gave it: c.lru = chainlib.NewLRU(c.count).
func (c *checker) madeHere(v ssa.Value, ctx *funcCtx) bool {
	v, _ = resolveFreeVar(v, ctx)
	load, ok := v.(*ssa.UnOp)
	if !ok || load.Op != token.MUL {
		return false
	}
	ix := c.index()
	var stores []storedValue
	switch addr := load.X.(type) {
	case *ssa.FieldAddr:
		f := fieldVar(addr.X.Type(), addr.Field)
		if f == nil || f.Pkg() != c.pass.Pkg || f.Exported() || ix.escaped[f] {
			return false
		}
		stores = ix.fieldStores[f]
	case *ssa.Global:
		if addr.Pkg == nil || addr.Pkg.Pkg != c.pass.Pkg || token.IsExported(addr.Name()) || ix.escaped[addr] {
			return false
		}
		stores = ix.globalStores[addr]
	default:
		return false
	}
	if len(stores) == 0 {
		return false
	}
	for _, s := range stores {
		v := s.v
		if x, ok := v.(*ssa.Extract); ok {
			v = x.Tuple
		}
		if k, ok := v.(*ssa.Const); ok && k.IsNil() {
			continue
		}
		call, ok := v.(*ssa.Call)
		if !ok || call.Call.StaticCallee() == nil {
			return false
		}
		for _, arg := range call.Call.Args {
			if holdsCode(arg.Type()) && !c.isVisibleCode(arg, s.ctx, 0) {
				return false
			}
		}
	}
	return true
}

// VisibleHook is the fact lockedcall exports for an exported package variable
// or field of an internal package that the package only ever sets to visible
// code: a clock or a shuffle (var TimeNow = time.Now) that the module's other
// packages call. Only the module can set it, so there it is visible code too.
type VisibleHook struct {
	Results []int // indexes of function-typed results that are visible code as well
	// Unset is true when the declaring package never sets the hook: a user
	// of the hook must set it itself (lrsclientinternal.TimeNow = time.Now).
	Unset bool
}

// AFact marks VisibleHook as an analysis fact.
func (*VisibleHook) AFact() {}

func (h *VisibleHook) String() string {
	if h.Unset {
		return "holds visible code where set"
	}
	if len(h.Results) > 0 {
		return fmt.Sprintf("holds visible code; results %v too", h.Results)
	}
	return "holds visible code"
}

// resultKey and paramKey name verdicts about a function's result and
// parameter i: distinct types, so that the two never share an answer.
type (
	resultKey struct {
		fn *ssa.Function
		i  int
	}
	paramKey struct {
		fn *ssa.Function
		i  int
	}
)

// ownsHook reports whether only this module can set obj: unexported and of
// this package, exported by this package where no other can import it (see
// unimportable), or exported by an internal package of the module.
func (c *checker) ownsHook(obj types.Object) bool {
	pkg := obj.Pkg()
	if pkg == nil {
		return false
	}
	if !obj.Exported() || unimportable(pkg) {
		return pkg == c.pass.Pkg
	}
	return isInternal(pkg.Path()) && (pkg == c.pass.Pkg || c.sameModule(pkg.Path())) || c.moduleVar(obj)
}

// moduleHook is the rest of the verdict on a hook whose stores in this
// package are visible: an exported one of this package must be set here at
// least once (the module's other packages are not seen); one of another
// package needs that package's VisibleHook fact, and no package this one
// imports may set it to code from outside (an OutsideHooks fact).
func (c *checker) moduleHook(obj types.Object, stores int) bool {
	switch {
	case obj.Pkg() != c.pass.Pkg:
		var fact VisibleHook
		return c.pass.ImportObjectFact(obj, &fact) && (!fact.Unset || stores > 0) && !c.setOutside(obj)
	case obj.Exported() && !unimportable(obj.Pkg()):
		return stores > 0 || c.exporting
	}
	return true
}

// unimportable reports whether no other package can import pkg: a command
// (package main) or an external test package (path "..._test"). Its
// exported fields, variables and functions are then set and called only by
// itself, like unexported ones. An exported name of a package that others
// can import is its API: whoever imports it may store there, the module's
// users among them, and the analysis, which sees the module only, cannot
// prove that nobody does.
func unimportable(pkg *types.Package) bool {
	return pkg.Name() == "main" || strings.HasSuffix(pkg.Path(), "_test")
}

// isInternal reports whether a package path has an internal element.
func isInternal(path string) bool {
	return path == "internal" || strings.HasPrefix(path, "internal/") ||
		strings.HasSuffix(path, "/internal") || strings.Contains(path, "/internal/")
}

// sameModule reports whether a package is of this package's module; without
// module information (the standard library, GOPATH) both must lack a dot in
// their first path element.
func (c *checker) sameModule(path string) bool {
	if m := c.pass.Module; m != nil && m.Path != "" {
		return path == m.Path || strings.HasPrefix(path, m.Path+"/")
	}
	first := func(p string) string { return strings.SplitN(p, "/", 2)[0] }
	return !strings.Contains(first(path), ".") && !strings.Contains(first(c.pass.Pkg.Path()), ".")
}

// hookResultsVisible reports whether result i of whatever the hook g holds is
// visible code: closeFn := internal.TimeAfterFunc(d, f) when TimeAfterFunc
// only ever holds a function that returns a closure stopping a timer.
func (c *checker) hookResultsVisible(g *ssa.Global, i int) bool {
	obj := g.Object()
	if obj == nil || !c.globalHoldsVisible(g) {
		return false
	}
	if obj.Pkg() != c.pass.Pkg {
		var fact VisibleHook
		return c.pass.ImportObjectFact(obj, &fact) && slices.Contains(fact.Results, i)
	}
	stores := c.index().globalStores[g]
	for _, s := range stores {
		var fn *ssa.Function
		switch v := s.v.(type) {
		case *ssa.Function:
			fn = v
		case *ssa.MakeClosure:
			fn = v.Fn.(*ssa.Function)
		}
		if fn == nil || !c.resultVisible(fn, i) {
			return false
		}
	}
	return len(stores) > 0
}

// exportHooks exports VisibleHook facts for the package's exported hooks, if
// it is internal. A hook it never sets is exported as Unset: the package that
// sets it decides.
func (c *checker) exportHooks(pkg *ssa.Package) {
	if !isInternal(c.pass.Pkg.Path()) {
		c.exportInitOnlyHooks()
		return
	}
	c.exporting = true
	defer func() { c.exporting = false }()
	for _, name := range sortedKeys(pkg.Members) {
		g, ok := pkg.Members[name].(*ssa.Global)
		if !ok || !token.IsExported(g.Name()) || g.Object() == nil || !holdsCode(g.Type().(*types.Pointer).Elem()) || !c.globalHoldsVisible(g) {
			continue
		}
		fact := VisibleHook{Unset: len(c.index().globalStores[g]) == 0}
		if sig, ok := g.Type().(*types.Pointer).Elem().Underlying().(*types.Signature); ok {
			for i := range sig.Results().Len() {
				if holdsCode(sig.Results().At(i).Type()) && c.hookResultsVisible(g, i) {
					fact.Results = append(fact.Results, i)
				}
			}
		}
		c.pass.ExportObjectFact(g.Object(), &fact)
	}
	for _, v := range inIndexOrder(c.index(), c.index().fieldStores) {
		if v.Pkg() == c.pass.Pkg && v.Exported() && holdsCode(v.Type()) && c.fieldHoldsVisible(v) {
			c.pass.ExportObjectFact(v, &VisibleHook{Unset: len(c.index().fieldStores[v]) == 0})
		}
	}
}

// OutsideHooks is the package fact lockedcall exports for a package of the
// module that stores code from outside in an exported hook of another of the
// module's internal packages, or lets its address go, or that imports a
// package that does: a public package that lets its users set an internal
// hook (func SetSleep(f func()) { clock.Sleep = f }). The hook's VisibleHook
// fact says what its own package stores; where such a package is imported,
// the hook holds code from outside.
type OutsideHooks struct {
	Hooks []HookRef
}

// HookRef names a package variable or field of a package.
type HookRef struct {
	Pkg  string // the package's path
	Path string // the object's path in it (golang.org/x/tools/go/types/objectpath)
	Name string // as the source spells it: Sleep, Options.OnTick
}

// AFact marks OutsideHooks as an analysis fact.
func (*OutsideHooks) AFact() {}

func (f *OutsideHooks) String() string {
	parts := make([]string, len(f.Hooks))
	for i, h := range f.Hooks {
		parts[i] = "sets " + h.Pkg + "." + h.Name + " from outside"
	}
	return strings.Join(parts, "; ")
}

// hookRef names obj for an OutsideHooks fact.
func hookRef(obj types.Object) (HookRef, bool) {
	if obj.Pkg() == nil {
		return HookRef{}, false
	}
	p, err := objectpath.For(obj)
	if err != nil {
		return HookRef{}, false
	}
	name := obj.Name()
	if v, ok := obj.(*types.Var); ok && v.IsField() {
		if typ, _, ok := strings.Cut(string(p), "."); ok {
			name = typ + "." + name // the type it is declared in
		}
	}
	return HookRef{Pkg: obj.Pkg().Path(), Path: string(p), Name: name}, true
}

// setOutside reports whether a package this one imports, directly or not,
// sets the hook obj of another package to code from outside, by their
// OutsideHooks facts.
func (c *checker) setOutside(obj types.Object) bool {
	if c.outsideHooks == nil {
		c.outsideHooks = map[HookRef]bool{}
		for _, pf := range c.pass.AllPackageFacts() {
			if f, ok := pf.Fact.(*OutsideHooks); ok {
				for _, h := range f.Hooks {
					c.outsideHooks[h] = true
				}
			}
		}
	}
	ref, ok := hookRef(obj)
	return ok && c.outsideHooks[ref]
}

// exportOutsideHooks exports the package's OutsideHooks fact: the hooks of the
// module's other packages, visible by their VisibleHook facts, that it stores
// code from outside in or lets the address of go, and those that the
// packages it imports name (go vet hands on only direct imports' package
// facts).
func (c *checker) exportOutsideHooks() {
	ix := c.index()
	set := map[HookRef]bool{}
	check := func(obj types.Object, stores []storedValue, escaped bool) {
		if obj == nil || obj.Pkg() == nil || obj.Pkg() == c.pass.Pkg || !c.ownsHook(obj) {
			return
		}
		var fact VisibleHook
		if !c.pass.ImportObjectFact(obj, &fact) || (!escaped && c.allVisible(stores)) {
			return
		}
		if ref, ok := hookRef(obj); ok {
			set[ref] = true
		}
	}
	for _, g := range inIndexOrder(ix, ix.globalStores) {
		check(g.Object(), ix.globalStores[g], ix.escaped[g])
	}
	for _, v := range inIndexOrder(ix, ix.fieldStores) {
		check(v, ix.fieldStores[v], ix.escaped[v])
	}
	for _, k := range inIndexOrder(ix, ix.escaped) {
		switch k := k.(type) {
		case *ssa.Global:
			check(k.Object(), nil, true)
		case *types.Var:
			check(k, nil, true)
		}
	}
	for _, pf := range c.pass.AllPackageFacts() {
		if f, ok := pf.Fact.(*OutsideHooks); ok && pf.Package != c.pass.Pkg {
			for _, h := range f.Hooks {
				if c.sameModule(h.Pkg) {
					set[h] = true
				}
			}
		}
	}
	if len(set) == 0 {
		return
	}
	fact := &OutsideHooks{Hooks: make([]HookRef, 0, len(set))}
	for h := range set {
		fact.Hooks = append(fact.Hooks, h)
	}
	slices.SortFunc(fact.Hooks, func(a, b HookRef) int {
		return strings.Compare(a.Pkg+"."+a.Path, b.Pkg+"."+b.Path)
	})
	c.pass.ExportPackageFact(fact)
}
