package lockedcall

import (
	"go/token"
	"go/types"

	"golang.org/x/tools/go/ssa"
)

// A package's own table of functions in an unexported package variable, a
// slice, array or map that it fills only with its own code, holds that code:
//
//	var lookups = []func(string) (string, bool){os.LookupEnv, lookupFile}
//	for _, l := range lookups { l(key) } // the package's own readers, not callbacks
//
// The variable qualifies when the package only loads it and stores in it,
// every value stored in it is nil, a map or slice literal (or make) filled
// with visible code, or an append of visible code to it, and every value
// loaded from it is only read by index, key or range, measured, compared, or
// stored into with visible code. Anything else (the table passed to a
// function, re-sliced, its address taken) leaves its elements from outside.

// tableVisible reports whether x, a value loaded from a package variable, is
// such a table.
func (c *checker) tableVisible(x ssa.Value) bool {
	load, ok := x.(*ssa.UnOp)
	if !ok || load.Op != token.MUL {
		return false
	}
	g, ok := load.X.(*ssa.Global)
	if !ok || g.Pkg == nil || g.Pkg.Pkg != c.pass.Pkg || token.IsExported(g.Name()) || !holdsCodeElems(g.Type().(*types.Pointer).Elem()) {
		return false
	}
	if c.index().escaped[g] {
		return false
	}
	return c.verdict(tableKey{g}, func() bool { return c.tableUsesVisible(g) })
}

type tableKey struct{ g *ssa.Global }

// holdsCodeElems reports whether t is a slice, array or map of functions.
func holdsCodeElems(t types.Type) bool {
	var elem types.Type
	switch t := t.Underlying().(type) {
	case *types.Slice:
		elem = t.Elem()
	case *types.Array:
		elem = t.Elem()
	case *types.Map:
		elem = t.Elem()
	default:
		return false
	}
	_, isFunc := elem.Underlying().(*types.Signature)
	return isFunc
}

// tableUsesVisible checks every use of g in the package.
func (c *checker) tableUsesVisible(g *ssa.Global) bool {
	for _, fn := range c.funcs {
		ctx := c.standaloneCtx(fn)
		for _, b := range fn.Blocks {
			for _, instr := range b.Instrs {
				var operands [8]*ssa.Value
				for _, op := range instr.Operands(operands[:0]) {
					if *op != g {
						continue
					}
					switch instr := instr.(type) {
					case *ssa.Store:
						if !c.tableValueVisible(instr.Val, g, ctx) {
							return false
						}
					case *ssa.UnOp:
						if !c.tableReadsVisible(instr, g, ctx) {
							return false
						}
					default:
						return false
					}
				}
			}
		}
	}
	return true
}

// tableValueVisible reports whether v, stored in g, holds only visible code.
func (c *checker) tableValueVisible(v ssa.Value, g *ssa.Global, ctx *funcCtx) bool {
	switch v := v.(type) {
	case *ssa.Const:
		return true
	case *ssa.UnOp:
		return v.Op == token.MUL && v.X == g
	case *ssa.MakeMap:
		for _, ref := range *v.Referrers() {
			switch ref := ref.(type) {
			case *ssa.MapUpdate:
				if ref.Map != v || !c.isVisibleCode(ref.Value, ctx, 0) {
					return false
				}
			case *ssa.Store:
				if ref.Addr != g {
					return false
				}
			default:
				return false
			}
		}
		return true
	case *ssa.Slice:
		alloc, ok := v.X.(*ssa.Alloc)
		if !ok || !onlyStoredIn(v, g) {
			return false
		}
		for _, ref := range *alloc.Referrers() {
			switch ref := ref.(type) {
			case *ssa.IndexAddr:
				for _, use := range *ref.Referrers() {
					st, ok := use.(*ssa.Store)
					if !ok || st.Addr != ref || !c.isVisibleCode(st.Val, ctx, 0) {
						return false
					}
				}
			case *ssa.Slice:
				if ref != v {
					return false
				}
			default:
				return false
			}
		}
		return true
	case *ssa.Call:
		b, ok := v.Call.Value.(*ssa.Builtin)
		if !ok || b.Name() != "append" || !onlyStoredIn(v, g) {
			return false
		}
		for _, arg := range v.Call.Args {
			if !c.tableValueVisible(arg, g, ctx) {
				return false
			}
		}
		return true
	}
	return false
}

// onlyStoredIn reports whether v goes nowhere but into g.
func onlyStoredIn(v ssa.Value, g *ssa.Global) bool {
	for _, ref := range *v.Referrers() {
		st, ok := ref.(*ssa.Store)
		if !ok || st.Addr != g || st.Val != v {
			if call, ok := ref.(*ssa.Call); ok {
				if b, ok := call.Call.Value.(*ssa.Builtin); ok && b.Name() == "append" && onlyStoredIn(call, g) {
					continue // append(append(t, f), h)
				}
			}
			return false
		}
	}
	return true
}

// tableReadsVisible reports whether the value load, loaded from g, is only
// read, or stored into with visible code.
func (c *checker) tableReadsVisible(load *ssa.UnOp, g *ssa.Global, ctx *funcCtx) bool {
	for _, ref := range *load.Referrers() {
		switch ref := ref.(type) {
		case *ssa.Lookup, *ssa.Range, *ssa.Index, *ssa.BinOp:
		case *ssa.IndexAddr:
			for _, use := range *ref.Referrers() {
				switch use := use.(type) {
				case *ssa.UnOp:
					if use.Op != token.MUL {
						return false
					}
				case *ssa.Store:
					if use.Addr != ref || !c.isVisibleCode(use.Val, ctx, 0) {
						return false
					}
				default:
					return false
				}
			}
		case *ssa.MapUpdate:
			if ref.Map != load || !c.isVisibleCode(ref.Value, ctx, 0) {
				return false
			}
		case *ssa.Call:
			b, ok := ref.Call.Value.(*ssa.Builtin)
			if !ok {
				return false
			}
			switch b.Name() {
			case "len", "cap", "delete":
			case "append":
				if len(ref.Call.Args) == 0 || ref.Call.Args[0] != load || !onlyStoredIn(ref, g) {
					return false
				}
			default:
				return false
			}
		default:
			return false
		}
	}
	return true
}
