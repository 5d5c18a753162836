package lockedcall

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/ssa"
)

// checkObligations checks, at each call of another package's function that
// carries Obligations and at each store in another package's field or
// variable that does, what the package passes or stores: its own visible code
// is fine; in an internal package, what comes in through its own exported API
// becomes its own obligation; anything else is reported there. Calls that
// already have a finding (a chain under the caller's lock) are left to it.
func (c *checker) checkObligations(funcs []*ssa.Function, findings []finding) []finding {
	reported := map[token.Pos]bool{}
	for _, fd := range findings {
		reported[fd.pos] = true
	}
	var out []finding
	for _, fn := range funcs {
		ctx := c.standaloneCtx(fn)
		for _, b := range fn.Blocks {
			for _, instr := range b.Instrs {
				var fd *finding
				switch instr := instr.(type) {
				case ssa.CallInstruction:
					fd = c.checkCall(instr.Common(), ctx)
				case *ssa.Store:
					fd = c.checkStore(instr, ctx)
				}
				if fd != nil && !reported[fd.pos] {
					reported[fd.pos] = true
					out = append(out, *fd)
				}
			}
		}
	}
	return out
}

// checkCall checks the arguments of one call against its callee's obligations.
func (c *checker) checkCall(common *ssa.CallCommon, ctx *funcCtx) *finding {
	obj, offset := calledObject(common)
	if obj == nil {
		return nil
	}
	for _, ob := range c.obligationsOf(obj) {
		j := ob.Param - offset
		if ob.Param < 0 || j < 0 || j >= len(common.Args) {
			continue
		}
		if fd := c.meet(ob, common.Args[j], ctx, obj.Pkg().Name()+"."+obj.Name()); fd != nil {
			fd.kind, fd.pos, fd.target = passToLocked, common.Pos(), c.argText(common, j, "a function value")
			if call := c.callAt(common.Pos()); call != nil {
				if k := j - (len(common.Args) - len(call.Args)); k >= 0 && k < len(call.Args) {
					fd.target = exprText(call.Args[k])
				}
			}
			return fd
		}
	}
	return nil
}

// checkStore checks a store in a field or package variable of another
// package against its obligations.
func (c *checker) checkStore(st *ssa.Store, ctx *funcCtx) *finding {
	var obj types.Object
	var target string
	switch a := st.Addr.(type) {
	case *ssa.FieldAddr:
		if f := fieldVar(a.X.Type(), a.Field); f != nil {
			obj, target = f, f.Name()
			if n := namedOf(a.X.Type()); n != nil {
				target = n.Obj().Name() + "." + target
			}
		}
	case *ssa.Global:
		if g := a.Object(); g != nil {
			obj, target = g, g.Name()
		}
	}
	if obj == nil {
		return nil
	}
	obs := c.obligationsOf(obj)
	if len(obs) == 0 {
		return nil
	}
	target = obj.Pkg().Name() + "." + target
	fd := c.meet(obs[0], st.Val, ctx, target)
	if fd != nil {
		fd.kind, fd.pos, fd.target = storeToLocked, st.Pos(), target
	}
	return fd
}

// calledObject returns the declared function or interface method a call
// runs, and how many of its parameters (a receiver) the call's arguments
// leave out.
func calledObject(common *ssa.CallCommon) (*types.Func, int) {
	if common.IsInvoke() {
		return common.Method, 1
	}
	fn := common.StaticCallee()
	if fn == nil {
		return nil, 0
	}
	if origin := fn.Origin(); origin != nil {
		fn = origin
	}
	if fn.Synthetic != "" && fn.Synthetic != "from type information" {
		return nil, 0 // a wrapper's parameters are not the declared function's
	}
	obj, _ := fn.Object().(*types.Func)
	return obj, 0
}

// obligationsOf returns another package's obligations on obj.
func (c *checker) obligationsOf(obj types.Object) []Obligation {
	if obj.Pkg() == nil || obj.Pkg() == c.pass.Pkg {
		return nil // the package's own are part of what sources traces
	}
	if obs, ok := c.importedObl[obj]; ok {
		return obs
	}
	var fact Obligations
	var obs []Obligation
	if c.pass.ImportObjectFact(obj, &fact) {
		obs = fact.Calls
	}
	c.importedObl[obj] = obs
	return obs
}

// meet checks a value passed to, or stored in, via where ob says it is called
// under a lock. It returns a finding, without its kind and position, if the
// value may be code from outside.
func (c *checker) meet(ob Obligation, v ssa.Value, ctx *funcCtx, via string) *finding {
	if c.isVisibleCode(v, ctx, 0) {
		return c.reentryObligation(ob, v, ctx)
	}
	if c.deferring() {
		if src := c.sources(v, ctx); src.ok {
			for _, e := range src.entries {
				c.obligations.add(e.obj, ob.passedOn(e.param, via))
			}
			return nil
		}
	}
	return &finding{oblig: &ob, out: c.classify(v, ctx).out, where: ctx.fn, val: v, vctx: ctx}
}

// describeValue says what a value that breaks an obligation is (its origin,
// or, for a closure, what it calls from outside), and what would re-enter.
func (c *checker) describeValue(fd *finding, text string) (what, reenters string) {
	if fd.out != visible {
		return fd.out.describe(), text
	}
	for _, ref := range c.classify(fd.val, fd.vctx).closures {
		ctx := &funcCtx{fn: ref.fn, parent: ref.ctx, bindings: ref.bindings}
		for _, b := range ref.fn.Blocks {
			for _, instr := range b.Instrs {
				call, ok := instr.(*ssa.Call)
				if !ok || call.Call.IsInvoke() || staticTopLevel(&call.Call) != nil {
					continue
				}
				if target := c.classify(call.Call.Value, ctx); target.out != visible {
					inner := c.calleeText(call.Pos())
					return "a closure that calls " + inner + ", " + target.out.describe(), inner
				}
			}
		}
	}
	return "a closure that calls code from outside", text
}

// exprText is the source of an expression, or "a func literal".
func exprText(e ast.Expr) string {
	if _, lit := ast.Unparen(e).(*ast.FuncLit); lit {
		return "a func literal"
	}
	return types.ExprString(e)
}

// obligationMessage renders a passToLocked or storeToLocked finding.
func (c *checker) obligationMessage(fd *finding) string {
	ob := fd.oblig
	chain := strings.Join(ob.Chain, " → ")
	if len(ob.Via) > 0 {
		chain = "through " + strings.Join(ob.Via, " → ") + "; " + chain
	}
	if fd.reentry != nil {
		return c.obligationReentryMessage(fd)
	}
	if fd.kind == storeToLocked {
		text := c.storedText(fd.pos)
		what, reenters := c.describeValue(fd, text)
		return fmt.Sprintf("%s (%s) is stored in %s, which package %s calls while %s (%s: %s); if %s re-enters, this deadlocks",
			text, what, fd.target, ob.Pkg, ob.Locks, ob.Where, chain, reenters)
	}
	what, reenters := c.describeValue(fd, fd.target)
	return fmt.Sprintf("call of %s passes %s (%s), which package %s calls while %s (%s: %s); if %s re-enters, this deadlocks",
		c.calleeText(fd.pos), fd.target, what, ob.Pkg, ob.Locks, ob.Where, chain, reenters)
}

// storeExpr returns the target and the value of the assignment or
// composite literal element whose store SSA places at pos (the selector of
// x.f = v, or the colon of F: v).
func (c *checker) storeExpr(pos token.Pos) (target, value ast.Expr) {
	if c.storeExprs == nil {
		c.storeExprs = map[token.Pos][2]ast.Expr{}
		for _, file := range c.pass.Files {
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.KeyValueExpr:
					c.storeExprs[n.Colon] = [2]ast.Expr{n.Key, n.Value}
				case *ast.AssignStmt:
					if len(n.Lhs) != len(n.Rhs) {
						break
					}
					for i, lhs := range n.Lhs {
						at := lhs.Pos()
						if sel, ok := lhs.(*ast.SelectorExpr); ok {
							at = sel.Sel.Pos()
						}
						c.storeExprs[at] = [2]ast.Expr{lhs, n.Rhs[i]}
					}
				}
				return true
			})
		}
	}
	e := c.storeExprs[pos]
	return e[0], e[1]
}

// storedText is the source of the value a store at pos stores.
func (c *checker) storedText(pos token.Pos) string {
	if _, value := c.storeExpr(pos); value != nil {
		return exprText(value)
	}
	return "a function value"
}
