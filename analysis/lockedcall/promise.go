package lockedcall

import (
	"fmt"
	"go/token"
	"go/types"
	"slices"

	"golang.org/x/tools/go/ssa"
)

// A method that implements an interface of another internal package is called
// through that interface by packages that know nothing of the implementation:
// the interface's package (xdsresource's watchers call ListenerWatcher's
// ResourceChanged) is below the one that implements it (xdsdepmgr's watcher,
// which calls its onDone under m.mu). Obligations cannot flow down, so the
// interface's package says instead what its own calls pass: a Promises fact
// on the interface method, for each parameter that every call of it in the
// package gives the package's own code (or what came in through a method
// that is only reached through promised interfaces itself).

// Promises is the fact lockedcall exports, in an internal package, for a
// method of one of its interfaces that the package calls: the parameters
// (0 is the receiver) to which every such call passes the module's own code.
// A method implementing it may then take those parameters as the module's
// code too; calls of the interface method in other packages are not seen.
type Promises struct {
	Params []int
}

// AFact marks Promises as an analysis fact.
func (*Promises) AFact() {}

// String renders the fact as the tests expect it, e.g. "params [2] get the module's code".
func (p *Promises) String() string {
	return fmt.Sprintf("params %v get the module's code", p.Params)
}

// exportPromises exports the Promises facts of the package's interface
// methods.
func (c *checker) exportPromises() {
	scope := c.pass.Pkg.Scope()
	for _, name := range scope.Names() {
		tn, ok := scope.Lookup(name).(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		iface, ok := tn.Type().Underlying().(*types.Interface)
		if !ok {
			continue
		}
		for i := range iface.NumExplicitMethods() {
			m := iface.ExplicitMethod(i)
			if params := c.promisedParams(m); len(params) > 0 {
				c.pass.ExportObjectFact(m, &Promises{Params: params})
			}
		}
	}
}

// promisedParams returns the function-typed parameters (counting the
// receiver as 0) to which every call of the interface method m in the
// package passes code that is the module's own.
func (c *checker) promisedParams(m *types.Func) []int {
	sites := c.index().invokeSites[m.Name()]
	params := m.Signature().Params()
	var out []int
	for j := range params.Len() {
		if _, isFunc := params.At(j).Type().Underlying().(*types.Signature); !isFunc {
			continue
		}
		calls, all := 0, true
		for _, site := range sites {
			common := site.instr.(ssa.CallInstruction).Common()
			if common.Method != m || j >= len(site.args) {
				continue
			}
			calls++
			if all = c.ownCode(site.args[j], site.ctx); !all {
				break
			}
		}
		if calls > 0 && all {
			out = append(out, j+1)
		}
	}
	return out
}

// ownCode reports whether v is the module's own code: visible, or coming in
// only through methods that are themselves reached only through interfaces
// whose packages promise their own code (a delegating watcher's onDone).
func (c *checker) ownCode(v ssa.Value, ctx *funcCtx) bool {
	if c.isVisibleCode(v, ctx, 0) {
		return true
	}
	src := c.sources(v, ctx)
	if !src.ok {
		return false
	}
	for _, e := range src.entries {
		fn, ok := e.obj.(*types.Func)
		if !ok || fn.Signature().Recv() == nil || e.param < 0 {
			return false
		}
		if n := namedOf(fn.Signature().Recv().Type()); n == nil || n.Obj().Exported() {
			return false // other packages may call it directly
		}
	}
	return true
}

// promised reports whether the interface method m of another package has a
// Promises fact that covers parameter param.
func (c *checker) promised(m *types.Func, param int) bool {
	if m.Pkg() == nil || m.Pkg() == c.pass.Pkg || !isInternal(m.Pkg().Path()) || !c.sameModule(m.Pkg().Path()) {
		return false
	}
	var fact Promises
	return c.pass.ImportObjectFact(m, &fact) && slices.Contains(fact.Params, param)
}

// interfaceMethod returns the method of the interface type t called name.
func interfaceMethod(t types.Type, name string) *types.Func {
	iface, ok := t.Underlying().(*types.Interface)
	if !ok {
		return nil
	}
	for i := range iface.NumMethods() {
		if m := iface.Method(i); m.Name() == name {
			return m
		}
	}
	return nil
}

// closureParamSources is sources for parameter i of a func literal that is
// only stored in unexported fields of the package, which the package only
// calls: what those calls pass (x.onUpdate(update, onDone)).
func (c *checker) closureParamSources(fn *ssa.Function, i int) sourced {
	return c.memoSources(sourceKey{fn: fn, i: i}, func() sourced {
		fields, ok := c.storedOnlyIn(fn)
		if !ok {
			return notSourced
		}
		ix := c.index()
		out := sourced{ok: true}
		for _, f := range fields {
			if ix.fieldCallsEscaped[f] || len(ix.fieldCalls[f]) == 0 {
				return notSourced
			}
			for _, site := range ix.fieldCalls[f] {
				if i >= len(site.args) {
					return notSourced
				}
				if out = out.join(c.sources(site.args[i], site.ctx)); !out.ok {
					return out
				}
			}
		}
		return out
	})
}

// storedOnlyIn returns the fields that the func literal fn is stored in,
// when that is all that is done with it: unexported fields of the package.
func (c *checker) storedOnlyIn(fn *ssa.Function) ([]*types.Var, bool) {
	var made ssa.Value = fn
	if mc := c.closureSite(fn); mc != nil {
		made = mc
	}
	var fields []*types.Var
	uses := 0
	for _, b := range fn.Parent().Blocks {
		for _, instr := range b.Instrs {
			var operands [8]*ssa.Value
			for _, op := range instr.Operands(operands[:0]) {
				if *op != made {
					continue
				}
				uses++
				st, ok := instr.(*ssa.Store)
				if !ok || st.Val != made {
					return nil, false
				}
				addr, ok := st.Addr.(*ssa.FieldAddr)
				if !ok {
					return nil, false
				}
				f := fieldVar(addr.X.Type(), addr.Field)
				if f == nil || f.Exported() || f.Pkg() != c.pass.Pkg || c.index().escaped[f] {
					return nil, false
				}
				fields = append(fields, f)
			}
		}
	}
	return fields, uses > 0
}

// closureSite returns the MakeClosure that makes fn, if it has free variables.
func (c *checker) closureSite(fn *ssa.Function) *ssa.MakeClosure {
	if len(fn.FreeVars) == 0 {
		return nil
	}
	c.standaloneCtx(fn) // builds closureSites
	return c.closureSites[fn]
}

// scanFieldCalls records, for the index, the calls of function values loaded
// from fields, and the fields whose values go anywhere else.
func (ix *storeIndex) scanFieldCalls(instr ssa.Instruction, ctx *funcCtx) {
	var f *types.Var
	switch v := instr.(type) {
	case *ssa.UnOp:
		if addr, ok := v.X.(*ssa.FieldAddr); ok && v.Op == token.MUL {
			f = fieldVar(addr.X.Type(), addr.Field)
		}
	case *ssa.Field:
		f = fieldVar(v.X.Type(), v.Field)
	}
	if f == nil {
		return
	}
	if _, isFunc := f.Type().Underlying().(*types.Signature); !isFunc {
		return
	}
	load := instr.(ssa.Value)
	for _, ref := range *load.Referrers() {
		switch ref := ref.(type) {
		case ssa.CallInstruction:
			if ref.Common().Value == load && !ref.Common().IsInvoke() {
				ix.fieldCalls[f] = append(ix.fieldCalls[f], storedCall{ref.Common().Args, ctx, ref})
				continue
			}
		case *ssa.BinOp: // f != nil
			continue
		}
		ix.fieldCallsEscaped[f] = true
	}
}
