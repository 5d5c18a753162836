package lockedcall

import (
	"go/ast"

	"golang.org/x/tools/go/ssa"
)

// This file follows code that runs inside a call: local closures and loop
// bodies of range-over-func loops. Deferred calls are in defers.go.

// closures analyzes the local closures a call may run, from the caller's state.
// It returns the state after the call (nil if none returns) and the first
// thing a closure runs from outside while a lock of the caller's is held.
func (f *flow) closures(refs []closureRef, common *ssa.CallCommon, site ssa.Instruction, st *lockState) (*lockState, *finding) {
	var exit *lockState
	var inner *finding
	for _, ref := range refs {
		key := memoKey{site: site, fn: ref.fn, state: st.signature()}
		res, ok := f.memo[key]
		if !ok {
			ctx := &funcCtx{fn: ref.fn, parent: ref.ctx, bindings: ref.bindings, caller: f.ctx, args: common.Args, depth: f.ctx.depth + 1}
			res = f.c.analyze(ctx, calleeEntry(st))
			f.memo[key] = res
		}
		exit = join(exit, callerExit(res.exit, st))
		if inner == nil {
			inner = firstUnder(res.findings, st)
		}
	}
	return exit, inner
}

// calleeEntry is the caller's state as a closure starts: the same locks, but
// none released by the closure's own deferred calls (nor, for a loop body,
// by its returns, which only continue the loop).
func calleeEntry(st *lockState) *lockState {
	entry := st.clone()
	for key, h := range entry.held {
		h.deferred = false
		entry.held[key] = h
	}
	return entry
}

// callerExit is the caller's state after a closure returned with exit: the
// caller's own deferred releases still pending.
func callerExit(exit, before *lockState) *lockState {
	if exit == nil {
		return nil
	}
	out := exit.clone()
	for key, h := range out.held {
		if b, ok := before.held[key]; ok && b.deferred {
			h.deferred = true
			out.held[key] = h
		}
	}
	return out
}

// firstUnder returns the first finding that involves a lock held in st, with
// its locks narrowed to those, and the others as its alternatives: the
// message names the first that is not reported elsewhere (dropCoveredChains).
func firstUnder(findings []finding, st *lockState) *finding {
	var under []finding
	for _, fd := range findings {
		var locks []heldLock
		for _, h := range fd.locks {
			if _, ok := st.held[h.path.key]; ok {
				locks = append(locks, h)
			}
		}
		if len(locks) > 0 {
			fd.locks = locks
			under = append(under, fd)
		}
	}
	if len(under) == 0 {
		return nil
	}
	first := under[0]
	first.alts = under[1:]
	return &first
}

// rangeYield returns the loop body of a range-over-func loop, which SSA passes
// to the iterator as a synthetic yield closure.
func rangeYield(common *ssa.CallCommon) *ssa.MakeClosure {
	if len(common.Args) != 1 {
		return nil
	}
	mc, ok := common.Args[0].(*ssa.MakeClosure)
	if !ok || mc.Fn.(*ssa.Function).Synthetic != rangeYieldSynthetic {
		return nil
	}
	return mc
}

// rangeOverFunc handles `for x := range seq`: the iterator runs under the
// caller's locks, and so does the loop body, which SSA makes a closure of.
func (f *flow) rangeOverFunc(common *ssa.CallCommon, yield *ssa.MakeClosure, site ssa.Instruction, st *lockState) {
	body := yield.Fn.(*ssa.Function)
	if len(st.held) > 0 {
		if rng, ok := body.Syntax().(*ast.RangeStmt); ok {
			if target := f.c.classify(common.Value, f.ctx); target.out != visible {
				f.report(finding{kind: rangeUnderLock, pos: rng.For, rangeStmt: rng, out: target.out, locks: st.locks(), val: common.Value, vctx: f.ctx})
			}
		}
	}
	key := memoKey{site: site, fn: body, state: st.signature()}
	res, ok := f.memo[key]
	if !ok {
		ctx := &funcCtx{fn: body, parent: f.ctx, bindings: yield.Bindings, depth: f.ctx.depth + 1}
		res = f.c.analyze(ctx, calleeEntry(st))
		f.memo[key] = res
	}
	if f.reporting {
		f.findings = append(f.findings, res.findings...)
	}
	// A static iterator's own lock effects hold after the loop.
	if actions, ok := f.lockActions(common); ok {
		f.applyNow(actions, nil, st)
	}
}
