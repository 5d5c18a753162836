package lockedcall

import (
	"go/types"

	"golang.org/x/tools/go/ssa"
)

// enterable reports whether the packages that pass parameter param of the
// exported function or method obj see its facts wherever they call it: a
// function always; a method unless it is reachable through an interface that
// another package declares (balancer.SubConn's RegisterHealthListener, say),
// whose callers know nothing of this package, and that does not promise the
// module's own code for the parameter (see Promises). A method of an
// interface the package declares itself carries its implementations'
// obligations (see exportObligations).
func (c *checker) enterable(obj *types.Func, param int) bool {
	recv := obj.Signature().Recv()
	if recv == nil {
		return true
	}
	named := namedOf(recv.Type())
	if named == nil {
		return false
	}
	if v, ok := c.enterMemo[enterKey{obj, param}]; ok {
		return v
	}
	v := c.noForeignInterface(named, obj.Name(), param)
	c.enterMemo[enterKey{obj, param}] = v
	return v
}

// enterKey names a memoized answer of enterable.
type enterKey struct {
	obj   *types.Func
	param int
}

// noForeignInterface reports whether no interface of another package with a
// method called name that does not promise the module's code for param is
// one the package converts named to, or, for an exported type, one of an
// imported package that it implements.
func (c *checker) noForeignInterface(named *types.Named, name string, param int) bool {
	for _, t := range c.index().ifaceTargets[named.Obj()] {
		if n := namedOf(t); n != nil && n.Obj().Pkg() == c.pass.Pkg {
			continue
		}
		if m := interfaceMethod(t, name); m != nil && !c.promised(m, param) {
			return false
		}
	}
	switch {
	case !named.Obj().Exported():
		return true // other packages convert it only where this one hands it out
	case named.TypeParams().Len() > 0:
		return false // not checked against the imported interfaces
	}
	ptr := types.NewPointer(named)
	for _, imp := range c.pass.Pkg.Imports() {
		scope := imp.Scope()
		for _, n := range scope.Names() {
			tn, ok := scope.Lookup(n).(*types.TypeName)
			if !ok || !tn.Exported() {
				continue
			}
			m := interfaceMethod(tn.Type(), name)
			if m == nil || c.promised(m, param) {
				continue
			}
			iface := tn.Type().Underlying().(*types.Interface)
			if types.Implements(named, iface) || types.Implements(ptr, iface) {
				return false
			}
		}
	}
	return true
}

// namedOf returns the declared type t is or points to, uninstantiated.
func namedOf(t types.Type) *types.Named {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := types.Unalias(t).(*types.Named); ok {
		return n.Origin()
	}
	return nil
}

// atomicSources is sources for what a Load or Swap of a sync/atomic.Pointer
// field of the package returns: a pointer to what the package stored, when it
// only ever stores a pointer to a variable of its own (cn.onClose.Store(&fn)),
// or nil.
func (c *checker) atomicSources(call *ssa.Call) sourced {
	name, f := atomicPointerCall(&call.Call)
	if (name != "Load" && name != "Swap") || f == nil || f.Pkg() != c.pass.Pkg || f.Exported() {
		return notSourced
	}
	ix := c.index()
	if ix.atomicEscaped[f] {
		return notSourced
	}
	return c.memoSources(sourceKey{obj: f, i: 1}, func() sourced {
		out := sourced{ok: true}
		for _, s := range ix.atomicStores[f] {
			switch v := s.v.(type) {
			case *ssa.Const:
				if !v.IsNil() {
					return notSourced
				}
			case *ssa.Alloc:
				for _, stored := range allocStores(v) {
					if out = out.join(c.sources(stored, s.ctx)); !out.ok {
						return out
					}
				}
			default:
				return notSourced
			}
		}
		return out
	})
}

// atomicPointerCall returns the method a call makes of a sync/atomic.Pointer
// that is a field, and the field; "" and nil for any other call.
func atomicPointerCall(common *ssa.CallCommon) (string, *types.Var) {
	fn := common.StaticCallee()
	if fn == nil || len(common.Args) == 0 {
		return "", nil
	}
	if origin := fn.Origin(); origin != nil {
		fn = origin
	}
	obj, ok := fn.Object().(*types.Func)
	if !ok || obj.Signature().Recv() == nil || !isAtomicPointer(obj.Signature().Recv().Type()) {
		return "", nil
	}
	addr, ok := common.Args[0].(*ssa.FieldAddr)
	if !ok {
		return "", nil
	}
	return obj.Name(), fieldVar(addr.X.Type(), addr.Field)
}

// isAtomicPointer reports whether t is, or points to, a sync/atomic.Pointer.
func isAtomicPointer(t types.Type) bool {
	n := namedOf(t)
	return n != nil && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "sync/atomic" && n.Obj().Name() == "Pointer"
}

// scanAtomic records, for the index, what the package stores in its
// sync/atomic.Pointer fields and which of them it hands out otherwise, and
// the interface types it converts its own types to.
func (ix *storeIndex) scanAtomic(instr ssa.Instruction, ctx *funcCtx) {
	switch instr := instr.(type) {
	case *ssa.FieldAddr:
		f := fieldVar(instr.X.Type(), instr.Field)
		if f == nil || !isAtomicPointer(f.Type()) {
			return
		}
		for _, ref := range *instr.Referrers() {
			call, ok := ref.(ssa.CallInstruction)
			if !ok || len(call.Common().Args) == 0 || call.Common().Args[0] != instr {
				ix.atomicEscaped[f] = true
				return
			}
			if name, _ := atomicPointerCall(call.Common()); name == "" {
				ix.atomicEscaped[f] = true
				return
			}
		}
	case ssa.CallInstruction:
		common := instr.Common()
		name, f := atomicPointerCall(common)
		switch {
		case f == nil:
		case (name == "Store" || name == "Swap") && len(common.Args) == 2:
			ix.atomicStores[f] = append(ix.atomicStores[f], storedValue{common.Args[1], ctx})
		case name == "CompareAndSwap" && len(common.Args) == 3:
			ix.atomicStores[f] = append(ix.atomicStores[f], storedValue{common.Args[2], ctx})
		}
	case *ssa.MakeInterface:
		if n := namedOf(instr.X.Type()); n != nil && n.Obj().Pkg() == ix.pkg {
			ix.ifaceTargets[n.Obj()] = append(ix.ifaceTargets[n.Obj()], instr.Type())
		}
	}
}
