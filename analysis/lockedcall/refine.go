package lockedcall

import (
	"go/token"

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
	return sliceElems(s, map[ssa.Value]bool{}, depth)
}

func sliceElems(s ssa.Value, seen map[ssa.Value]bool, depth int) ([]ssa.Value, bool) {
	if depth > maxPathDepth {
		return nil, false
	}
	if seen[s] {
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
			elems, ok := sliceElems(e, seen, depth+1)
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
		base, ok := sliceElems(v.Call.Args[0], seen, depth+1)
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
