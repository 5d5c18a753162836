package lockedcall

import "golang.org/x/tools/go/ssa"

// result is what the analysis of one function in one context found.
type result struct {
	exit     *lockState // the state at its returns, joined; nil if it never returns
	findings []finding
}

// flow is the forward dataflow over one function's blocks in one context.
type flow struct {
	c     *checker
	ctx   *funcCtx
	tries map[ssa.Value]pendingLock // TryLock results: the lock is held where they are true
	// relockAtReturn are the mutexes that deferred calls lock again on some
	// path; the function returns holding them.
	relockAtReturn map[string]pendingLock
	memo           map[memoKey]result               // closures and loop bodies analyzed at a call site
	defers         map[*ssa.BasicBlock][]*ssa.Defer // by block: those that may run at its return, latest first
	gos            []goSite                         // go statements under a lock (see handoff.go)
	waits          []waitSite

	reporting bool // the fixpoint is reached: record findings and the exit state
	findings  []finding
	exit      *lockState
}

// pendingLock is a lock that will be held later: on the true branch of a
// TryLock, or when a deferred Lock runs at return.
type pendingLock struct {
	path lockPath
	name string
	read bool
	// somePaths is true for a deferred closure that locks on some paths only.
	somePaths bool
}

type memoKey struct {
	site  ssa.Instruction
	fn    *ssa.Function
	state string
}

// maxClosureDepth bounds how deep closures called from closures are followed;
// it also stops a closure that calls itself.
const maxClosureDepth = 6

// analyze runs the dataflow over ctx.fn from the state entry to a fixpoint,
// then walks the blocks once more to record what happens under a lock. The
// state at a block's entry is the join of its predecessors' exits ("held on
// some path"), so a call is reported when some path reaches it with the lock
// held, and a path that released the lock and returned early adds nothing.
func (c *checker) analyze(ctx *funcCtx, entry *lockState) result {
	fn := ctx.fn
	if len(fn.Blocks) == 0 || ctx.depth > maxClosureDepth {
		return result{exit: entry}
	}
	f := &flow{c: c, ctx: ctx, tries: map[ssa.Value]pendingLock{}, relockAtReturn: map[string]pendingLock{}, memo: map[memoKey]result{}}
	in := make([]*lockState, len(fn.Blocks))
	in[0] = entry
	queued := make([]bool, len(fn.Blocks))
	work := []*ssa.BasicBlock{fn.Blocks[0]}
	queued[0] = true
	for len(work) > 0 {
		b := work[0]
		work = work[1:]
		queued[b.Index] = false
		out := f.block(b, in[b.Index].clone())
		for i, succ := range b.Succs {
			merged := join(in[succ.Index], f.edge(b, i, out))
			if !equal(merged, in[succ.Index]) {
				in[succ.Index] = merged
				if !queued[succ.Index] {
					queued[succ.Index] = true
					work = append(work, succ)
				}
			}
		}
	}
	f.reporting = true
	f.exit = nil
	for _, b := range fn.Blocks {
		if in[b.Index] != nil {
			f.block(b, in[b.Index].clone())
		}
	}
	f.handoffs()
	return result{exit: f.exit, findings: f.findings}
}

// edge returns the state that flows along b's i'th successor edge: on the true
// edge of `if mu.TryLock()` the mutex is held.
func (f *flow) edge(b *ssa.BasicBlock, i int, out *lockState) *lockState {
	if i != 0 || len(b.Instrs) == 0 {
		return out
	}
	cond, ok := b.Instrs[len(b.Instrs)-1].(*ssa.If)
	if !ok {
		return out
	}
	t, ok := f.tries[cond.Cond]
	if !ok {
		return out
	}
	held := out.clone()
	held.acquire(t.path, t.name, t.read)
	return held
}

// block applies the block's instructions to st, which it owns.
func (f *flow) block(b *ssa.BasicBlock, st *lockState) *lockState {
	for _, instr := range b.Instrs {
		f.noteHandoff(instr, st)
		switch instr := instr.(type) {
		case *ssa.Call:
			f.noteRelease(instr, st)
			st = f.call(instr.Common(), instr, st)
		case *ssa.Defer:
			f.noteRelease(instr, st)
			f.deferCall(instr, st)
		case *ssa.Return:
			f.runDefers(instr, st)
			f.exit = join(f.exit, f.returning(st))
		}
		// *ssa.Go is left out on purpose: the goroutine does not run under
		// the caller's lock.
	}
	return st
}

// returning is the state after a return has run the deferred calls: the
// mutexes they release are released, and those they lock (testing.B.Run's
// `benchmarkLock.Unlock(); defer benchmarkLock.Lock()`) are held again.
func (f *flow) returning(st *lockState) *lockState {
	out := st.clone()
	for key, h := range st.held {
		if h.deferred {
			delete(out.held, key)
		}
	}
	for key, t := range f.relockAtReturn {
		if r, wasCallers := out.released[key]; wasCallers {
			if t.somePaths {
				r.must = false // given back on some paths only
				out.released[key] = r
			} else {
				delete(out.released, key) // given back as found
			}
			continue
		}
		_, wasHeld := out.held[key]
		out.acquire(t.path, t.name, t.read)
		if t.somePaths && !wasHeld {
			h := out.held[key]
			h.must = false
			out.held[key] = h
		}
	}
	return out
}

func (f *flow) report(fd finding) {
	if f.reporting {
		if fd.where == nil {
			fd.where = f.ctx.fn
		}
		f.findings = append(f.findings, fd)
	}
}

// call applies a call to st and records it if it runs outside code under a
// lock. It returns the state after the call.
func (f *flow) call(common *ssa.CallCommon, site *ssa.Call, st *lockState) *lockState {
	// A range-over-func loop first: its iterator may be a static function,
	// but its body is analyzed nowhere else.
	if yield := rangeYield(common); yield != nil {
		f.rangeOverFunc(common, yield, site, st)
		return st
	}
	if actions, ok := f.lockActions(common); ok {
		f.noteSite(site, common, st)
		f.chainCall(common, st.locks(), callUnderLock)
		f.reentryDirect(common, st)
		f.applyNow(actions, site, st)
		return st
	}
	if common.IsInvoke() {
		f.interfaceCall(common, st.locks(), callUnderLock)
		return st
	}
	target := f.c.classify(common.Value, f.ctx)
	if target.out != visible && len(st.held) > 0 {
		f.report(finding{kind: callUnderLock, pos: common.Pos(), out: target.out, locks: st.locks(), val: common.Value, vctx: f.ctx})
	}
	if target.out == visible {
		f.reentryValue(common, st)
	}
	exit, inner := f.closures(target.closures, common, site, st)
	if inner != nil {
		f.report(finding{kind: closureUnderLock, pos: common.Pos(), inner: inner, locks: inner.locks})
	}
	if exit == nil {
		return st
	}
	return exit
}

// interfaceCall records, under -interfaces, a method call on an interface
// value that the caller chose, made while locks are held.
func (f *flow) interfaceCall(common *ssa.CallCommon, locks []heldLock, kind findingKind) {
	if !f.c.interfaces || len(locks) == 0 {
		return
	}
	recv := common.Value
	for {
		ci, ok := recv.(*ssa.ChangeInterface)
		if !ok {
			break
		}
		recv = ci.X
	}
	if _, concrete := recv.(*ssa.MakeInterface); concrete {
		return // the dynamic type is known here
	}
	if target := f.c.classify(recv, f.ctx); interfaceReceiverReported(target.out) {
		f.report(finding{kind: kind, pos: common.Pos(), out: target.out, locks: locks, method: common.Method.Name()})
	}
}
