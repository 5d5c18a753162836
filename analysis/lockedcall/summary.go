package lockedcall

import (
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"

	"golang.org/x/tools/go/ssa"
)

// A function's summary lists the code from outside that it calls as it runs,
// directly or through the functions it calls (not in the goroutines it
// starts): a parameter, a field reached from a parameter (the receiver's
// c.onEvict), or a value it finds itself (a map element, a package variable).
// A call made under a lock is reported when the callee's summary, with the
// call's arguments, still calls something from outside: the helper chain
// `Add → removeOldest → removeElement → c.onEvict` is reported at the call of
// removeOldest. Each function is summarized once, from the summaries of the
// functions it calls, so the work is linear in the size of the package; a
// cycle of calls is summarized in a few rounds (cycle.go); other packages'
// summaries come from CallSummary facts.

// outCall is one call of code from outside that a function makes.
type outCall struct {
	param int      // the function's parameter the code is reached from; -1 for none
	steps []string // fields from that parameter to the code; none for the parameter itself
	out   origin   // where the called value comes from, as the innermost function sees it
	text  string   // the called value, as the innermost call (or the caller's argument) spells it
	chain []string // the functions called on the way, outermost first, ending with the innermost call
	// via are the functions of this package on the chain that see the code
	// as their own outside call, rather than as their parameter: a locked
	// helper among them reports it itself (see lockedhelper.go).
	via []*ssa.Function
	// val is the called value seen from vctx (with valSteps below it, the
	// fields the callee calls), for an internal package to trace to its
	// exported API; nil where a fact stands for the callee.
	val      ssa.Value
	vctx     *funcCtx
	valSteps []string
	// defaulted says that the field called holds its package's own code
	// unless a function of setBy is called (see defaults.go).
	defaulted bool
	setBy     []string
}

// key identifies the code an outside call calls, for a summary to list once.
func (o outCall) key() string {
	return o.text + "|" + strings.Join(o.steps, ".") + "|" + strconv.Itoa(o.param)
}

// plainParam reports whether the code called is the function's parameter
// itself, whose argument decides whether it is from outside.
func (o outCall) plainParam() bool { return o.param >= 0 && len(o.steps) == 0 }

// maxOutCalls bounds a summary, and maxChain the functions a chain names:
// both keep facts small and the work per call site constant.
const (
	maxOutCalls = 8
	maxChain    = 8
)

// summaryOf returns what code from outside fn calls as it runs. A function
// in a cycle of calls (a → b → a) is summarized with the others of the cycle
// until none of their summaries changes (see cycle.go).
func (c *checker) summaryOf(fn *ssa.Function) []outCall {
	if origin := fn.Origin(); origin != nil {
		fn = origin
	}
	if s, ok := c.summaries[fn]; ok {
		return s
	}
	if c.srcFuncs[fn] && fn.Parent() == nil {
		c.analyzeTopLevel(fn) // to know where it has released its caller's locks
		if s, ok := c.summaries[fn]; ok {
			return s
		}
	}
	if !c.srcFuncs[fn] && (fn.Synthetic == "" || len(fn.Blocks) == 0) {
		s := c.importedCalls(fn)
		c.summaries[fn] = s
		return s
	}
	return c.cycleSummary(fn, func() []outCall {
		s := c.bodyCalls(&funcCtx{fn: fn}, 0)
		if c.srcFuncs[fn] {
			for i := range s {
				if !s[i].plainParam() {
					s[i].via = append(append([]*ssa.Function(nil), s[i].via...), fn)
				}
			}
		}
		return s
	}, func(s []outCall) { c.summaries[fn] = s })
}

// bodyCalls collects the outside calls of the function in ctx, closures it
// calls included.
func (c *checker) bodyCalls(ctx *funcCtx, depth int) []outCall {
	var set outCallSet
	for _, b := range ctx.fn.Blocks {
		for _, instr := range b.Instrs {
			call, ok := instr.(ssa.CallInstruction)
			if !ok {
				continue
			}
			if _, isGo := instr.(*ssa.Go); isGo {
				continue // the goroutine does not run as part of the call
			}
			common := call.Common()
			if op, _ := lockOpOf(common); op != notLockOp || common.IsInvoke() || c.afterRelease(instr) {
				continue
			}
			set.add(c.callCalls(common, ctx, depth)...)
		}
	}
	return set.calls
}

// callCalls returns what code from outside one call runs, seen from ctx.
func (c *checker) callCalls(common *ssa.CallCommon, ctx *funcCtx, depth int) []outCall {
	var out []outCall
	if yield := rangeYield(common); yield != nil {
		// The loop body runs as part of the function, whatever the iterator.
		body := closureRef{fn: yield.Fn.(*ssa.Function), bindings: yield.Bindings, ctx: ctx}
		out = append(out, c.closureCalls(body, depth+1)...)
	}
	if g := staticTopLevel(common); g != nil {
		for _, e := range c.summaryOf(g) {
			out = append(out, c.atCall(e, g, common, ctx, depth)...)
		}
		return out
	}
	target := c.classify(common.Value, ctx)
	if p, steps := rootParam(common.Value, ctx); target.out != visible && (p >= 0 || target.out != fromCall) {
		// A function value a callee computes by a call of its own (a table
		// lookup, a factory) is its business, not its callers': such
		// results are reported where the lock is taken, not through chains.
		text := c.calleeText(common.Pos())
		out = append(out, outCall{param: p, steps: steps, out: target.out, text: text, chain: []string{text}, val: common.Value, vctx: ctx})
	}
	for _, ref := range target.closures {
		// Called here, the closure's parameters are this call's arguments.
		called := &funcCtx{fn: ref.fn, parent: ref.ctx, bindings: ref.bindings, caller: ctx, args: common.Args, depth: ctx.depth + 1}
		if depth+1 <= maxClosureDepth {
			out = append(out, c.bodyCalls(called, depth+1)...)
		}
	}
	return out
}

// closureCalls returns the outside calls of a closure's body.
func (c *checker) closureCalls(ref closureRef, depth int) []outCall {
	if depth > maxClosureDepth {
		return nil
	}
	compute := func() []outCall {
		return c.bodyCalls(&funcCtx{fn: ref.fn, parent: ref.ctx, bindings: ref.bindings, depth: ref.ctx.depth + 1}, depth)
	}
	if ref.ctx.caller != nil {
		return compute()
	}
	if s, ok := c.closureSummaries[ref.fn]; ok {
		return s
	}
	return c.cycleSummary(closureKey{ref.fn}, compute, func(s []outCall) { c.closureSummaries[ref.fn] = s })
}

// atCall translates an outside call e of the callee g to the call common made
// in ctx: a parameter becomes the argument, which may be visible code (nothing
// is returned then), a closure (what it calls), or code from outside.
func (c *checker) atCall(e outCall, g *ssa.Function, common *ssa.CallCommon, ctx *funcCtx, depth int) []outCall {
	chain := prefixed(g.Name(), e.chain)
	if e.param < 0 || e.param >= len(common.Args) {
		if e.param >= 0 {
			return nil
		}
		return []outCall{{param: -1, out: e.out, text: e.text, chain: chain, via: e.via, val: e.val, vctx: e.vctx, valSteps: e.valSteps}}
	}
	arg := common.Args[e.param]
	if len(e.steps) > 0 {
		if c.ownedPathVisible(arg, e.steps, ctx) || c.madeHere(arg, ctx) || c.defaultHeld(e, g) {
			return nil
		}
		p, steps := rootParam(arg, ctx)
		if p >= 0 {
			steps = append(steps, e.steps...)
		}
		text := e.text
		if recv := c.argText(common, e.param, ""); recv != "" {
			text = recv + "." + strings.Join(e.steps, ".")
		}
		return []outCall{{param: p, steps: steps, out: e.out, text: text, chain: chain, via: e.via, val: arg, vctx: ctx, valSteps: e.steps, defaulted: e.defaulted, setBy: e.setBy}}
	}
	var out []outCall
	target := c.classify(arg, ctx)
	if target.out != visible {
		p, steps := rootParam(arg, ctx)
		out = append(out, outCall{param: p, steps: steps, out: target.out, text: c.argText(common, e.param, e.text), chain: chain, via: e.via, val: arg, vctx: ctx})
	}
	for _, ref := range target.closures {
		for _, inner := range c.closureCalls(ref, depth+1) {
			inner.chain = joinChains(chain, inner.chain)
			inner.via = append(append([]*ssa.Function(nil), e.via...), inner.via...)
			out = append(out, inner)
		}
	}
	return out
}

// afterRelease reports whether instr runs, in every analysis that reached it,
// after its function released a lock of its caller's on every path: code
// called there does not run under the caller's lock (testing.B.Run's
// benchmarkLock.Unlock(); defer benchmarkLock.Lock(); ...).
func (c *checker) afterRelease(instr ssa.Instruction) bool {
	seen := c.releasedAt[instr]
	return seen.released && !seen.kept
}

// noteRelease records, for afterRelease, whether a call was reached with a
// caller's lock released on every path.
func (f *flow) noteRelease(instr ssa.Instruction, st *lockState) {
	if !f.reporting {
		return
	}
	seen := f.c.releasedAt[instr]
	released := false
	for _, r := range st.released {
		released = released || r.must
	}
	if released {
		seen.released = true
	} else {
		seen.kept = true
	}
	f.c.releasedAt[instr] = seen
}

// releaseSeen is what noteRelease saw at one call.
type releaseSeen struct{ released, kept bool }

// rootParam returns the parameter of ctx's top-level function that v is, or
// is reached from through fields (and those fields), or -1.
func rootParam(v ssa.Value, ctx *funcCtx) (int, []string) {
	var steps []string // innermost first
	for range maxPathDepth {
		switch x := v.(type) {
		case *ssa.Parameter:
			if ctx.parent != nil || ctx.caller != nil {
				return -1, nil
			}
			i := paramIndex(ctx.fn, x)
			if i < 0 {
				return -1, nil
			}
			for l, r := 0, len(steps)-1; l < r; l, r = l+1, r-1 {
				steps[l], steps[r] = steps[r], steps[l]
			}
			return i, steps
		case *ssa.FreeVar:
			i := freeVarIndex(ctx.fn, x)
			if i < 0 || ctx.parent == nil {
				return -1, nil
			}
			v, ctx = ctx.bindings[i], ctx.parent
		case *ssa.UnOp:
			if x.Op != token.MUL {
				return -1, nil
			}
			if stored, storedCtx := singleStoreOf(x.X, ctx); stored != nil {
				v, ctx = stored, storedCtx
				continue
			}
			if _, isParam := x.X.(*ssa.Parameter); isParam {
				steps = append(steps, "*") // through a pointer the caller passed
			}
			v = x.X
		case *ssa.FieldAddr:
			steps = append(steps, fieldName(x.X.Type(), x.Field))
			v = x.X
		case *ssa.Field:
			steps = append(steps, fieldName(x.X.Type(), x.Field))
			v = x.X
		case *ssa.MakeInterface:
			v = x.X
		case *ssa.ChangeType:
			v = x.X
		default:
			return -1, nil
		}
	}
	return -1, nil
}

// singleStoreOf is singleStore without a checker: a local assigned once.
func singleStoreOf(addr ssa.Value, ctx *funcCtx) (ssa.Value, *funcCtx) {
	addr, ctx = resolveFreeVar(addr, ctx)
	alloc, ok := addr.(*ssa.Alloc)
	if !ok {
		return nil, nil
	}
	if stores := allocStores(alloc); len(stores) == 1 {
		return stores[0], ctx
	}
	return nil, nil
}

// argText is the source of argument i of a call, counting a method call's
// receiver as argument 0, or fallback where the call has no source (a
// wrapper's).
func (c *checker) argText(common *ssa.CallCommon, i int, fallback string) string {
	call := c.callAt(common.Pos())
	if call == nil {
		return fallback
	}
	j := i - (len(common.Args) - len(call.Args))
	switch {
	case j >= 0 && j < len(call.Args):
		return types.ExprString(call.Args[j])
	case j == -1:
		if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
			return types.ExprString(sel.X)
		}
	}
	return fallback
}

func prefixed(name string, chain []string) []string {
	return joinChains([]string{name}, chain)
}

// joinChains concatenates two chains into a new slice, keeping the first
// functions and the innermost call when the result is too long.
func joinChains(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	out = append(append(out, a...), b...)
	if len(out) > maxChain {
		out = append(out[:maxChain-2:maxChain-2], "…", out[len(out)-1])
	}
	return out
}

// outCallSet collects outside calls, once per called value and parameter.
type outCallSet struct {
	calls []outCall
	seen  map[string]bool
}

func (s *outCallSet) add(calls ...outCall) {
	for _, o := range calls {
		if len(s.calls) >= maxOutCalls {
			return
		}
		key := o.key()
		if s.seen[key] {
			continue
		}
		if s.seen == nil {
			s.seen = map[string]bool{}
		}
		s.seen[key] = true
		s.calls = append(s.calls, o)
	}
}
