package lockedcall

import (
	"slices"

	"golang.org/x/tools/go/ssa"
)

// Deferred calls run at return, last in first out, with whatever is held
// then. A defer statement only schedules what the call does to mutexes
// (deferCall); what it runs from outside is checked at each return, by
// running the deferred calls registered before it, in reverse, from the state
// the function returns in (runDefers). That covers defer fn() after defer
// mu.Unlock(), a deferred closure that notifies and then unlocks
// (defer func() { cb(); mu.Unlock() }()), and defer cb() with the lock still
// held as the function returns.

// deferCall handles a defer statement: a deferred unlock keeps the mutex held
// to the end of the function, and what a deferred call does to mutexes (a
// lock operation, a helper's effects, a closure's) happens at return.
func (f *flow) deferCall(d *ssa.Defer, st *lockState) {
	common := d.Common()
	if actions, ok := f.lockActions(common); ok {
		f.atReturn(actions, st)
		return
	}
	if common.IsInvoke() {
		return
	}
	target := f.c.classify(common.Value, f.ctx)
	if exit, _ := f.closures(target.closures, common, d, st); exit != nil {
		f.atReturn(exitActions(st, exit), st)
	}
}

// runDefers checks the deferred calls that may run at ret, in the order they
// run, from the state st the function returns in.
func (f *flow) runDefers(ret *ssa.Return, st *lockState) {
	if !f.reporting {
		return
	}
	defers := f.defersBefore(ret)
	if len(defers) == 0 {
		return
	}
	s := calleeEntry(st) // nothing is pending any more: the deferred calls run now
	var found []finding
	releasedAt := map[string]int{} // lock key -> the step that released it
	for step, d := range defers {
		common := d.Common()
		before := s.clone()
		switch actions, isLockCall := f.lockActions(common); {
		case isLockCall:
			found = append(found, f.chainFinding(common, s.locks(), step)...)
			f.applyNow(actions, nil, s)
		case common.IsInvoke():
			if locks := s.locks(); f.c.interfaces && len(locks) > 0 {
				sub := &flow{c: f.c, ctx: f.ctx, reporting: true}
				sub.interfaceCall(common, locks, deferBeforeUnlock)
				found = append(found, stepped(sub.findings, step)...)
			}
		default:
			target := f.c.classify(common.Value, f.ctx)
			if target.out != visible && len(s.held) > 0 {
				found = append(found, finding{kind: deferBeforeUnlock, pos: common.Pos(), out: target.out, locks: s.locks(), step: step, val: common.Value, vctx: f.ctx})
			}
			exit, inner := f.closures(target.closures, common, d, s)
			if inner != nil {
				found = append(found, finding{kind: deferBeforeUnlock, pos: common.Pos(), inner: inner, locks: inner.locks, step: step})
			}
			if exit != nil {
				s = exit
			}
		}
		for key := range before.held {
			if _, still := s.held[key]; !still {
				releasedAt[key] = step
			}
		}
	}
	for _, fd := range found {
		// "before the deferred unlock" when a call that runs later releases
		// every lock named; else the locks are held as the function returns.
		for _, h := range fd.locks {
			if at, ok := releasedAt[h.path.key]; !ok || at <= fd.step {
				fd.kind = deferAtReturn
			}
		}
		f.report(fd)
	}
}

// chainFinding is chainCall for a deferred call: the finding, not reported yet.
func (f *flow) chainFinding(common *ssa.CallCommon, locks []heldLock, step int) []finding {
	sub := &flow{c: f.c, ctx: f.ctx, reporting: true}
	sub.chainCall(common, locks, deferBeforeUnlock)
	return stepped(sub.findings, step)
}

func stepped(findings []finding, step int) []finding {
	for i := range findings {
		findings[i].step = step
	}
	return findings
}

// defersBefore returns the defer statements that may have run before ret,
// latest first: those whose block reaches ret's. Registration order is taken
// as block order, which the SSA builder makes source order.
func (f *flow) defersBefore(ret *ssa.Return) []*ssa.Defer {
	if f.defers == nil {
		f.defers = map[*ssa.BasicBlock][]*ssa.Defer{}
		var all []*ssa.Defer
		for _, b := range f.ctx.fn.Blocks {
			for _, instr := range b.Instrs {
				if d, ok := instr.(*ssa.Defer); ok {
					all = append(all, d)
				}
			}
		}
		for _, d := range all {
			for _, b := range reachable(d.Block()) {
				f.defers[b] = append(f.defers[b], d)
			}
		}
		for b, ds := range f.defers {
			slices.Reverse(ds)
			f.defers[b] = ds
		}
	}
	return f.defers[ret.Block()]
}

// reachable returns the blocks reachable from b, b included.
func reachable(b *ssa.BasicBlock) []*ssa.BasicBlock {
	seen := map[*ssa.BasicBlock]bool{b: true}
	out := []*ssa.BasicBlock{b}
	for i := 0; i < len(out); i++ {
		for _, s := range out[i].Succs {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}
