package lockedcall

import (
	"go/token"
	"slices"

	"golang.org/x/tools/go/ssa"
)

// Shapes in which a value that looks like it comes from outside holds visible
// code, told apart from the function's own data and control flow: a
// parameter that only flows on where a nil check said it is nil, the
// parameter of a func literal called once where it is made, and an element of
// a slice the function builds itself with make and append.

// onlyCallArg returns argument i of the one call of the func literal fn, when
// fn is only ever called, once, directly where its parent makes it.
func onlyCallArg(fn *ssa.Function, i int) ssa.Value {
	var made ssa.Value = fn
	var refs *[]ssa.Instruction
	for _, b := range fn.Parent().Blocks {
		for _, instr := range b.Instrs {
			if mc, ok := instr.(*ssa.MakeClosure); ok && mc.Fn == fn {
				made, refs = mc, mc.Referrers()
			}
		}
	}
	var arg ssa.Value
	uses := 0
	check := func(instr ssa.Instruction) {
		var operands [8]*ssa.Value
		for _, op := range instr.Operands(operands[:0]) {
			if *op != made {
				continue
			}
			uses++
			if call, ok := instr.(ssa.CallInstruction); ok && call.Common().Value == made && i < len(call.Common().Args) {
				if _, isGo := instr.(*ssa.Go); !isGo {
					arg = call.Common().Args[i]
				}
			}
		}
	}
	if refs != nil {
		for _, instr := range *refs {
			check(instr)
		}
	} else {
		for _, b := range fn.Parent().Blocks {
			for _, instr := range b.Instrs {
				check(instr)
			}
		}
	}
	if uses != 1 {
		return nil
	}
	return arg
}

// nilOnEdge reports whether edge i of phi only carries its value where a
// comparison with nil said it is nil: in
//
//	if onEvicted != nil { onEvicted = c.onEvicted }
//
// the parameter reaches the merge only on the nil branch.
func nilOnEdge(phi *ssa.Phi, i int) bool {
	v := phi.Edges[i]
	pred := phi.Block().Preds[i]
	for b := pred; b != nil; b = b.Idom() {
		if len(b.Instrs) == 0 {
			continue
		}
		cond, ok := b.Instrs[len(b.Instrs)-1].(*ssa.If)
		if !ok {
			continue
		}
		cmp, ok := cond.Cond.(*ssa.BinOp)
		if !ok || (cmp.Op != token.EQL && cmp.Op != token.NEQ) {
			continue
		}
		other := cmp.Y
		if cmp.Y == v {
			other = cmp.X
		} else if cmp.X != v {
			continue
		}
		if k, isConst := other.(*ssa.Const); !isConst || !k.IsNil() {
			continue
		}
		nilBranch := b.Succs[0]
		if cmp.Op == token.NEQ {
			nilBranch = b.Succs[1]
		}
		if b == pred {
			return nilBranch == phi.Block() && b.Succs[0] != b.Succs[1]
		}
		return nilBranch.Dominates(pred)
	}
	return false
}

// localSliceElems returns the values appended to a slice that the function
// builds itself (var fns []func(); fns = append(fns, f)), when that is all
// the slice ever holds: collect the callbacks under the lock, call them after.
func localSliceElems(s ssa.Value, depth int) ([]ssa.Value, bool) {
	return sliceElems(s, nil, map[ssa.Value]bool{}, depth)
}

// sliceElems returns the values appended to the slice s; a value for which
// self is true is the slice variable being built, whose other stores say
// what it holds.
func sliceElems(s ssa.Value, self func(ssa.Value) bool, seen map[ssa.Value]bool, depth int) ([]ssa.Value, bool) {
	if depth > maxPathDepth {
		return nil, false
	}
	if seen[s] || (self != nil && self(s)) {
		return nil, true // a loop appending to the slice: its other edges say what
	}
	seen[s] = true
	switch v := s.(type) {
	case *ssa.Const:
		return nil, v.IsNil()
	case *ssa.MakeSlice:
		for _, ref := range *v.Referrers() {
			if _, isIndexAddr := ref.(*ssa.IndexAddr); isIndexAddr {
				return nil, false // written by index, not only appended to
			}
		}
		return nil, true
	case *ssa.Phi:
		var out []ssa.Value
		for _, e := range v.Edges {
			elems, ok := sliceElems(e, self, seen, depth+1)
			if !ok {
				return nil, false
			}
			out = append(out, elems...)
		}
		return out, true
	case *ssa.Call:
		b, ok := v.Call.Value.(*ssa.Builtin)
		if !ok || b.Name() != "append" || len(v.Call.Args) != 2 {
			return nil, false
		}
		base, ok := sliceElems(v.Call.Args[0], self, seen, depth+1)
		if !ok {
			return nil, false
		}
		added, ok := varargs(v.Call.Args[1])
		if !ok {
			return nil, false
		}
		return append(base, added...), true
	}
	return nil, false
}

// varargs returns the values stored into the array behind the slice an
// append's variadic arguments are packed into.
func varargs(s ssa.Value) ([]ssa.Value, bool) {
	sl, ok := s.(*ssa.Slice)
	if !ok {
		return nil, false
	}
	arr, ok := sl.X.(*ssa.Alloc)
	if !ok {
		return nil, false
	}
	var out []ssa.Value
	for _, ref := range *arr.Referrers() {
		ia, ok := ref.(*ssa.IndexAddr)
		if !ok {
			continue
		}
		for _, use := range *ia.Referrers() {
			if st, ok := use.(*ssa.Store); ok && st.Addr == ia {
				out = append(out, st.Val)
			}
		}
	}
	return out, true
}

// capturedSliceElems returns what a slice variable holds that its function
// and the closures it makes build only by appending, each with the context
// it was appended in, for a closure that ranges over it:
//
//	var updateFuncs []func()
//	f.ForeachSetting(func(s http2.Setting) error { updateFuncs = append(updateFuncs, func() { ... }) })
//	c.executeAndPut(func() bool { for _, f := range updateFuncs { f() }; return true })
func (c *checker) capturedSliceElems(s ssa.Value, ctx *funcCtx) ([]storedValue, bool) {
	load, ok := s.(*ssa.UnOp)
	if !ok || load.Op != token.MUL {
		return nil, false
	}
	addr, actx := resolveFreeVar(load.X, ctx)
	alloc, ok := addr.(*ssa.Alloc)
	if !ok || actx == nil {
		return nil, false
	}
	// The variable, and the free variables of the closures bound to it.
	vars, ctxs := []ssa.Value{alloc}, []*funcCtx{actx}
	for i := 0; i < len(vars); i++ {
		for _, ref := range *vars[i].Referrers() {
			switch ref := ref.(type) {
			case *ssa.Store:
				if ref.Addr != vars[i] {
					return nil, false
				}
			case *ssa.UnOp:
				if ref.Op != token.MUL || !onlyReadOrAppended(ref) {
					return nil, false
				}
			case *ssa.MakeClosure:
				fn := ref.Fn.(*ssa.Function)
				for k, b := range ref.Bindings {
					if b == vars[i] && len(vars) <= maxOutCalls {
						vars, ctxs = append(vars, fn.FreeVars[k]), append(ctxs, c.standaloneCtx(fn))
					}
				}
			case *ssa.DebugRef:
			default:
				return nil, false
			}
		}
	}
	self := func(v ssa.Value) bool {
		l, ok := v.(*ssa.UnOp)
		return ok && l.Op == token.MUL && slices.Contains(vars, l.X)
	}
	var out []storedValue
	for i, v := range vars {
		for _, ref := range *v.Referrers() {
			if st, ok := ref.(*ssa.Store); ok {
				elems, ok := sliceElems(st.Val, self, map[ssa.Value]bool{}, 0)
				if !ok {
					return nil, false
				}
				for _, e := range elems {
					out = append(out, storedValue{e, ctxs[i]})
				}
			}
		}
	}
	return out, true
}

// onlyReadOrAppended reports whether a loaded slice is only indexed to read,
// appended to, measured or compared with nil: nothing writes its elements.
func onlyReadOrAppended(slice *ssa.UnOp) bool {
	for _, ref := range *slice.Referrers() {
		switch ref := ref.(type) {
		case *ssa.IndexAddr:
			for _, use := range *ref.Referrers() {
				if l, ok := use.(*ssa.UnOp); !ok || l.Op != token.MUL {
					return false
				}
			}
		case *ssa.Call:
			b, ok := ref.Call.Value.(*ssa.Builtin)
			if !ok || !(b.Name() == "len" || b.Name() == "cap" || (b.Name() == "append" && ref.Call.Args[0] == slice)) {
				return false
			}
		case *ssa.BinOp, *ssa.DebugRef:
		default:
			return false
		}
	}
	return true
}
