package lockedcall

import (
	"go/token"
	"go/types"

	"golang.org/x/tools/go/ssa"
)

// A sync.Cond's L is the mutex it was made with: c := sync.NewCond(&s.mu)
// makes c.L.Lock() and s.mu.Lock() one lock, and c.Wait() gives it back as
// it found it. Without this, a Lock through c.L and an Unlock of s.mu are two
// different mutexes, and everything after the unlock looks held.

// isCondL reports whether field i of the struct t points to is sync.Cond's L.
func isCondL(t types.Type, i int) bool {
	return isSyncType(t, "Cond") && fieldName(t, i) == "L"
}

// isSyncType reports whether t is, or points to, the named type of package
// sync.
func isSyncType(t types.Type, name string) bool {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	named, ok := types.Unalias(t).(*types.Named)
	return ok && named.Obj().Pkg() != nil && named.Obj().Pkg().Path() == "sync" && named.Obj().Name() == name
}

// condLock returns the path of the mutex that the sync.Cond at cond (a
// *sync.Cond value, or the address of a sync.Cond) was made with, when the
// package says so in one way.
func (c *checker) condLock(cond ssa.Value, ctx *funcCtx, depth int) (lockPath, bool) {
	if depth > maxPathDepth {
		return lockPath{}, false
	}
	cond, ctx = resolveFreeVar(cond, ctx)
	switch x := cond.(type) {
	case *ssa.Call:
		if fn := x.Call.StaticCallee(); fn != nil && qualifiedName(fn) == "sync.NewCond" {
			return c.aliasPath(x.Call.Args[0], ctx, depth), true
		}
	case *ssa.UnOp:
		if x.Op != token.MUL {
			break
		}
		switch addr := x.X.(type) {
		case *ssa.FieldAddr: // s.cond, a *sync.Cond field
			if steps, ok := c.condSteps(fieldVar(addr.X.Type(), addr.Field)); ok {
				return c.extendSteps(c.pathOfDepth(addr.X, ctx, depth+1), steps), true
			}
		case *ssa.Global, *ssa.Alloc: // a variable assigned once
			if stored, storedCtx := c.singleStoreAny(addr, ctx); stored != nil {
				return c.condLock(stored, storedCtx, depth+1)
			}
		}
	case *ssa.FieldAddr: // &s.cond, a sync.Cond field
		if steps, ok := c.condSteps(fieldVar(x.X.Type(), x.Field)); ok {
			return c.extendSteps(c.pathOfDepth(x.X, ctx, depth+1), steps), true
		}
	case *ssa.Alloc: // cond := sync.Cond{L: &mu}
		for _, ref := range *x.Referrers() {
			if fa, ok := ref.(*ssa.FieldAddr); ok && isCondL(x.Type(), fa.Field) {
				if stored, storedCtx := c.singleStoreAny(fa, ctx); stored != nil {
					return c.aliasPath(stored, storedCtx, depth), true
				}
			}
		}
	}
	return lockPath{}, false
}

// aliasPath is the path of the mutex a Cond's L holds, named as the mutex.
func (c *checker) aliasPath(locker ssa.Value, ctx *funcCtx, depth int) lockPath {
	p := c.pathOfDepth(locker, ctx, depth+1)
	p.viaCond = true
	return p
}

func (c *checker) extendSteps(p lockPath, steps []string) lockPath {
	for _, s := range steps {
		p = p.extend(s, true)
	}
	p.viaCond = true
	return p
}

// singleStoreAny resolves a package variable, a local or a field address
// assigned once in the package to the value assigned.
func (c *checker) singleStoreAny(addr ssa.Value, ctx *funcCtx) (ssa.Value, *funcCtx) {
	if g, ok := addr.(*ssa.Global); ok {
		stores := c.index().globalStores[g]
		if len(stores) == 1 {
			return stores[0].v, stores[0].ctx
		}
		return nil, nil
	}
	if fa, ok := addr.(*ssa.FieldAddr); ok {
		var stored []ssa.Value
		for _, ref := range *fa.Referrers() {
			if st, ok := ref.(*ssa.Store); ok && st.Addr == fa {
				stored = append(stored, st.Val)
			}
		}
		if len(stored) == 1 {
			return stored[0], ctx
		}
		return nil, nil
	}
	return c.singleStore(addr, ctx)
}

// condSteps returns the fields that lead from the struct holding the Cond
// field f to the mutex its L points to, when every store the package makes
// into f (s.cond = sync.NewCond(&s.mu)) or into its L (s.cond.L = &s.mu)
// gives the same ones.
func (c *checker) condSteps(f *types.Var) ([]string, bool) {
	if f == nil || f.Pkg() != c.pass.Pkg || !isSyncType(f.Type(), "Cond") {
		return nil, false
	}
	if s, ok := c.condFields[f]; ok {
		return s.steps, s.ok
	}
	found := condFieldSteps{}
	agree := func(steps []string, ok bool) {
		switch {
		case !ok:
			found.ok, found.seen = false, true
		case !found.seen:
			found = condFieldSteps{steps: steps, ok: true, seen: true}
		case joinSteps(found.steps) != joinSteps(steps):
			found.ok = false
		}
	}
	for _, fn := range c.funcs {
		for _, b := range fn.Blocks {
			for _, instr := range b.Instrs {
				st, ok := instr.(*ssa.Store)
				if !ok {
					continue
				}
				addr, ok := st.Addr.(*ssa.FieldAddr)
				if !ok {
					continue
				}
				switch {
				case fieldVar(addr.X.Type(), addr.Field) == f: // s.cond = sync.NewCond(&s.mu)
					call, isCall := st.Val.(*ssa.Call)
					if fn := staticCalleeOf(call, isCall); fn == nil || qualifiedName(fn) != "sync.NewCond" {
						agree(nil, false)
						continue
					}
					agree(relativeSteps(call.Call.Args[0], addr.X))
				case isCondL(addr.X.Type(), addr.Field): // s.cond.L = &s.mu
					if inner, ok := addr.X.(*ssa.FieldAddr); ok && fieldVar(inner.X.Type(), inner.Field) == f {
						agree(relativeSteps(st.Val, inner.X))
					}
				}
			}
		}
	}
	c.condFields[f] = found
	return found.steps, found.ok && found.seen
}

type condFieldSteps struct {
	steps    []string
	ok, seen bool
}

func staticCalleeOf(call *ssa.Call, ok bool) *ssa.Function {
	if !ok {
		return nil
	}
	return call.Call.StaticCallee()
}

// relativeSteps returns the fields from base to the address v, as in
// &s.mu relative to s.
func relativeSteps(v, base ssa.Value) ([]string, bool) {
	var steps []string // innermost first
	for range maxPathDepth {
		if v == base {
			out := make([]string, len(steps))
			for i, s := range steps {
				out[len(steps)-1-i] = s
			}
			return out, true
		}
		switch x := v.(type) {
		case *ssa.MakeInterface:
			v = x.X
		case *ssa.ChangeType:
			v = x.X
		case *ssa.FieldAddr:
			steps = append(steps, fieldName(x.X.Type(), x.Field))
			v = x.X
		default:
			return nil, false
		}
	}
	return nil, false
}
