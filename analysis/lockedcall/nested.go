package lockedcall

import (
	"go/ast"

	"golang.org/x/tools/go/ssa"
)

// This file follows code that runs inside a call: local closures, loop bodies
// of range-over-func loops, and deferred calls.

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
// its locks narrowed to those.
func firstUnder(findings []finding, st *lockState) *finding {
	for _, fd := range findings {
		var locks []heldLock
		for _, h := range fd.locks {
			if _, ok := st.held[h.path.key]; ok {
				locks = append(locks, h)
			}
		}
		if len(locks) > 0 {
			fd.locks = locks
			return &fd
		}
	}
	return nil
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
				f.report(finding{kind: rangeUnderLock, pos: rng.For, rangeStmt: rng, out: target.out, locks: st.locks()})
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

// deferCall handles a defer statement. A deferred unlock keeps the mutex held
// to the end of the function; a deferred call of outside code registered after
// it runs first, under the mutex. What a deferred call does to mutexes (a lock
// operation, a helper's effects, a closure's) happens at return.
func (f *flow) deferCall(d *ssa.Defer, st *lockState) {
	common := d.Common()
	if actions, ok := f.lockActions(common); ok {
		f.atReturn(actions, st)
		return
	}
	if common.IsInvoke() {
		f.interfaceCall(common, st, deferBeforeUnlock)
		return
	}
	pending := st.deferredLocks()
	target := f.c.classify(common.Value, f.ctx)
	if target.out != visible && len(pending) > 0 {
		f.report(finding{kind: deferBeforeUnlock, pos: common.Pos(), out: target.out, locks: pending})
	}
	deferredOnly := newLockState()
	for _, h := range pending {
		deferredOnly.held[h.path.key] = h
	}
	exit, _ := f.closures(target.closures, common, d, st)
	if inner := f.deferredInner(target.closures, common, d, deferredOnly); inner != nil {
		f.report(finding{kind: deferBeforeUnlock, pos: common.Pos(), inner: inner, locks: inner.locks})
	}
	if exit != nil {
		f.atReturn(exitActions(st, exit), st)
	}
}

// deferredInner analyzes a deferred closure from the locks that will still be
// held when it runs: those a deferred unlock registered before it releases.
func (f *flow) deferredInner(refs []closureRef, common *ssa.CallCommon, site ssa.Instruction, pending *lockState) *finding {
	if len(pending.held) == 0 {
		return nil
	}
	_, inner := f.closures(refs, common, site, pending)
	return inner
}
