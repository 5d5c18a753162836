package lockedcall

import (
	"fmt"
	"go/token"
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/ssa"
)

// A callee's outside call through its receiver's fields (sync.Pool's Get
// calls p.New) is visible code when the receiver is a struct value only this
// package reaches and every store the package makes at that path is visible:
// var nodes = sync.Pool{New: ...}; nodes.Get(). The store index records those
// stores by root and path.

// scanPath records a store below, or onto, a struct value that only the
// package reaches: an unexported package variable or field of struct type.
func (ix *storeIndex) scanPath(st *ssa.Store, ctx *funcCtx) {
	var steps []string // innermost first
	for addr := st.Addr; ; {
		if key, ok := ix.ownedKey(addr); ok {
			if len(steps) == 0 {
				ix.scanWhole(key, st.Val, ctx)
				return
			}
			slices.Reverse(steps)
			path := key + "." + joinSteps(steps)
			ix.pathStores[path] = append(ix.pathStores[path], storedValue{st.Val, ctx})
			return
		}
		fa, ok := addr.(*ssa.FieldAddr)
		if !ok {
			return
		}
		steps = append(steps, fieldName(fa.X.Type(), fa.Field))
		addr = fa.X
	}
}

// scanWhole records a store of a whole struct value at an owned root: the zero
// value, or a composite literal built in a local first (as a package
// variable's initializer is), whose fields' stores count as the root's.
func (ix *storeIndex) scanWhole(key string, val ssa.Value, ctx *funcCtx) {
	if _, isConst := val.(*ssa.Const); isConst {
		return
	}
	load, ok := val.(*ssa.UnOp)
	if alloc, isAlloc := unopAlloc(load, ok); isAlloc {
		ix.copyFieldStores(key, alloc, ctx, 0)
		return
	}
	ix.wholeStores[key] = true
}

func unopAlloc(load *ssa.UnOp, ok bool) (*ssa.Alloc, bool) {
	if !ok || load.Op != token.MUL {
		return nil, false
	}
	alloc, isAlloc := load.X.(*ssa.Alloc)
	return alloc, isAlloc
}

// copyFieldStores records the stores into the fields of a local struct as
// stores at the path key.
func (ix *storeIndex) copyFieldStores(key string, addr ssa.Value, ctx *funcCtx, depth int) {
	if depth > maxPathDepth {
		ix.wholeStores[key] = true
		return
	}
	for _, ref := range *addr.Referrers() {
		switch ref := ref.(type) {
		case *ssa.FieldAddr:
			path := key + "." + fieldName(ref.X.Type(), ref.Field)
			for _, use := range *ref.Referrers() {
				if st, ok := use.(*ssa.Store); ok && st.Addr == ref {
					ix.pathStores[path] = append(ix.pathStores[path], storedValue{st.Val, ctx})
				}
			}
			ix.copyFieldStores(path, ref, ctx, depth+1)
		case *ssa.Store:
			if _, isConst := ref.Val.(*ssa.Const); ref.Addr == addr && !isConst {
				ix.wholeStores[key] = true
			}
		}
	}
}

// ownedKey names the root of scanPath's paths.
func (ix *storeIndex) ownedKey(addr ssa.Value) (string, bool) {
	switch a := addr.(type) {
	case *ssa.Global:
		if a.Pkg != nil && a.Pkg.Pkg == ix.pkg && !token.IsExported(a.Name()) {
			if _, isStruct := a.Type().(*types.Pointer).Elem().Underlying().(*types.Struct); isStruct {
				return "g:" + a.Name(), true
			}
		}
	case *ssa.FieldAddr:
		if f := fieldVar(a.X.Type(), a.Field); f != nil && f.Pkg() == ix.pkg && !f.Exported() {
			if _, isStruct := f.Type().Underlying().(*types.Struct); isStruct {
				return fieldKey(f), true
			}
		}
	}
	return "", false
}

func fieldKey(f *types.Var) string { return fmt.Sprintf("f:%p", f) }

func joinSteps(steps []string) string { return strings.Join(steps, ".") }

// ownedPathVisible reports whether the code at steps below arg (a callee's
// receiver, say, whose field New it calls) is visible code because arg is a
// value only this package reaches, and every store the package makes at that
// path stores visible code: var bufPool = sync.Pool{New: ...}; bufPool.Get().
func (c *checker) ownedPathVisible(arg ssa.Value, steps []string, ctx *funcCtx) bool {
	key, ok := c.ownedRoot(arg, ctx)
	if !ok {
		return false
	}
	ix := c.index()
	path := key + "." + joinSteps(steps)
	if ix.wholeStores[key] {
		return false
	}
	return c.allVisible(ix.pathStores[path])
}

// ownedRoot names the unexported package variable, or unexported field of a
// struct value, that v is the address of.
func (c *checker) ownedRoot(v ssa.Value, ctx *funcCtx) (string, bool) {
	v, _ = resolveFreeVar(v, ctx)
	return c.index().ownedKey(v)
}

// mapField returns the field a map value is loaded from, if it is one.
func mapField(m ssa.Value) *types.Var {
	load, ok := m.(*ssa.UnOp)
	if !ok || load.Op != token.MUL {
		return nil
	}
	addr, ok := load.X.(*ssa.FieldAddr)
	if !ok {
		return nil
	}
	return fieldVar(addr.X.Type(), addr.Field)
}

// mapHoldsVisible reports whether the map m is an unexported field of this
// package, only ever made here (make or a literal), whose every element the
// package stores is visible code: handlers the package wraps itself.
func (c *checker) mapHoldsVisible(m ssa.Value) bool {
	f := mapField(m)
	if f == nil || f.Pkg() != c.pass.Pkg || f.Exported() {
		return false
	}
	ix := c.index()
	if len(ix.fieldStores[f]) == 0 || len(ix.elemStores[f]) == 0 || ix.escapedMaps[f] {
		return false // filled elsewhere, or never: nothing says what it holds
	}
	for _, s := range ix.fieldStores[f] {
		if _, made := s.v.(*ssa.MakeMap); !made {
			return false
		}
	}
	key := struct{ elems *types.Var }{f}
	return c.verdict(key, func() bool { return c.allVisible(ix.elemStores[f]) })
}

// onlyIndexed reports whether a loaded map is only read, ranged over, stored
// into by key, measured, compared with nil or deleted from, or turned into an
// interface value,
// through which only reflection could write to it (assert.NotNil(t, c.fns)).
func onlyIndexed(m ssa.Value) bool {
	if _, isMap := m.Type().Underlying().(*types.Map); !isMap {
		return true
	}
	for _, ref := range *m.Referrers() {
		switch ref := ref.(type) {
		case *ssa.Lookup, *ssa.Range, *ssa.MakeInterface, *ssa.BinOp: // BinOp: m == nil
		case *ssa.MapUpdate:
			if ref.Value == m || ref.Key == m {
				return false
			}
		case *ssa.Call:
			b, ok := ref.Call.Value.(*ssa.Builtin)
			if !ok || (b.Name() != "len" && b.Name() != "delete" && b.Name() != "clear") {
				return false
			}
		default:
			return false
		}
	}
	return true
}
